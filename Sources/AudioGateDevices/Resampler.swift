import CSampleRate

/// A streaming band-limited resampler (libsamplerate `SRC_STATE *`) whose filter state carries
/// across calls, so audio cut into chunks of any size resamples as if it were one piece.
///
/// Not thread-safe: one owner at a time (the capture thread, or one playback stream's writer).
public final class Resampler {
    /// libsamplerate's sinc converters; linear interpolation is deliberately not offered.
    public enum Quality: String, Sendable, CaseIterable {
        case fastest
        case medium
        case best

        var converter: Int32 {
            switch self {
            case .fastest: Int32(SRC_SINC_FASTEST)
            case .medium: Int32(SRC_SINC_MEDIUM_QUALITY)
            case .best: Int32(SRC_SINC_BEST_QUALITY)
            }
        }
    }

    /// Input rate in Hz.
    public let inputRate: Int
    /// Output rate in Hz.
    public let outputRate: Int
    /// Interleaved channels.
    public let channels: Int
    /// The converter in use.
    public let quality: Quality
    private let ratio: Double
    private let state: OpaquePointer?
    private var data = SRC_DATA()

    /// Creates a resampler from `inputRate` to `outputRate`; equal rates copy straight through.
    public init(inputRate: Int, outputRate: Int, channels: Int, quality: Quality = .fastest) throws(ResamplerError) {
        guard inputRate > 0, outputRate > 0, Double(outputRate) / Double(inputRate) <= 256,
            Double(inputRate) / Double(outputRate) <= 256
        else {
            throw ResamplerError(code: .invalidRatio, message: "cannot convert \(inputRate) Hz to \(outputRate) Hz")
        }
        guard (1...8).contains(channels) else {
            throw ResamplerError(code: .invalidChannels, message: "\(channels) channels")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.quality = quality
        ratio = Double(outputRate) / Double(inputRate)
        if inputRate == outputRate {
            state = nil
        } else {
            var error: Int32 = 0
            guard let created = src_new(quality.converter, Int32(channels), &error) else {
                throw ResamplerError(code: .library, message: String(cString: src_strerror(error)))
            }
            state = created
        }
    }

    deinit {
        if let state { src_delete(state) }
    }

    /// The most output frames `inputFrames` of input can produce in one call.
    public func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        Int((Double(inputFrames) * ratio).rounded(.up)) + 64
    }

    /// Converts interleaved input; returns the frames written to `output` (sized by
    /// `maximumOutputFrames`). All input is consumed; the filter keeps its history for the next call.
    @discardableResult
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>, endOfInput: Bool = false
    ) -> Int {
        let inputFrames = input.count / channels
        let outputCapacity = output.count / channels
        guard let state else {
            let frames = min(inputFrames, outputCapacity)
            if frames > 0, let source = input.baseAddress, let destination = output.baseAddress {
                destination.update(from: source, count: frames * channels)
            }
            return frames
        }
        var consumed = 0
        var produced = 0
        // libsamplerate may stop short of the input when the output fills; loop until it is all used.
        repeat {
            data.data_in = input.baseAddress.map { $0 + consumed * channels }
            data.input_frames = inputFrames - consumed
            data.data_out = output.baseAddress.map { $0 + produced * channels }
            data.output_frames = outputCapacity - produced
            data.src_ratio = ratio
            data.end_of_input = endOfInput ? 1 : 0
            guard src_process(state, &data) == 0 else { break }
            consumed += data.input_frames_used
            produced += data.output_frames_gen
            if data.input_frames_used == 0 && data.output_frames_gen == 0 { break }
        } while consumed < inputFrames && produced < outputCapacity
        return produced
    }

    /// Array convenience for tests and off-thread use.
    public func process(_ input: [Float], endOfInput: Bool = false) -> [Float] {
        var output = [Float](repeating: 0, count: maximumOutputFrames(forInputFrames: input.count / channels) * channels)
        let frames = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                process(source, into: destination, endOfInput: endOfInput)
            }
        }
        output.removeLast(output.count - frames * channels)
        return output
    }

    /// Forgets the filter history (after a flush or a discontinuity).
    public func reset() {
        if let state { src_reset(state) }
    }
}
