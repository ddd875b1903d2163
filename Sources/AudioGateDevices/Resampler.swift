import CSpeexDSP

/// A streaming band-limited resampler whose filter state carries across calls, so audio cut into
/// chunks of any size resamples as if it were one piece.
///
/// At `fastest`, rates in a small whole-number ratio (48 to 16 kHz, 24 to 48 kHz) go through
/// `PolyphaseFilter`; every other pair, and the higher qualities, through speexdsp
/// (`SpeexResamplerState *`).
///
/// Output frame `k` is input frame `k / ratio`: the filter delay is not emitted as leading zeros, so
/// after `n` input frames and `m` output frames the resampler holds `n - m / ratio` input frames.
///
/// Not thread-safe: one owner at a time (the capture thread, or one playback stream's writer).
public final class Resampler {
    /// Windowed-sinc qualities; the lower speexdsp ones are deliberately not offered.
    public enum Quality: String, Sendable, CaseIterable {
        case fastest
        case medium
        case best

        /// The speexdsp quality (0-10) behind this case.
        package var speexQuality: Int32 {
            // 5 is the cheapest that rejects tones above the output's Nyquist frequency by 97 dB
            // (the design's figure; 3 lets 9 kHz through at -88 dB into 16 kHz) and keeps spurs next to a
            // tone below -90 dB between every client rate and 44.1 or 48 kHz hardware.
            switch self {
            case .fastest: 5
            case .medium: 7
            case .best: 10
            }
        }

        /// What converts at this quality, for the info route.
        public var summary: String {
            switch self {
            case .fastest:
                "polyphase sinc (\(Int(PolyphaseFilter.attenuation)) dB stopband) for whole-number ratios,"
                    + " speexdsp quality \(speexQuality) otherwise (fastest)"
            case .medium, .best: "speexdsp quality \(speexQuality) (\(rawValue))"
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
    /// The speexdsp converter, when no `filter` is used and the rates differ.
    private let state: OpaquePointer?
    /// The SIMD polyphase filter, for small whole-number ratios at `fastest`.
    private let filter: PolyphaseFilter?
    /// Input frames the filter looks ahead of the output it produces.
    private let latency: Int
    /// `latency` frames of silence, fed to push the held tail out at the end of input.
    private let zeros: [Float]
    /// The rates divided by their greatest common divisor: `inputCycle` input frames make exactly
    /// `outputCycle` output frames.
    private let inputCycle: Int
    private let outputCycle: Int
    /// Input frames consumed and output frames produced since the last reset, less whole cycles.
    private var consumed = 0
    private var produced = 0

    /// Creates a resampler from `inputRate` to `outputRate`; equal rates copy straight through.
    public convenience init(inputRate: Int, outputRate: Int, channels: Int, quality: Quality = .fastest) throws(ResamplerError) {
        try self.init(inputRate: inputRate, outputRate: outputRate, channels: channels, quality: quality, engine: .automatic)
    }

    /// Which converter a `fastest` resampler uses, so benchmarks can set them side by side.
    public enum Engine: Sendable {
        /// The polyphase filter where the ratio allows, in the widest vector unit; speexdsp otherwise.
        case automatic
        /// The polyphase filter kept to the baseline vector unit (SSE2, NEON).
        case baselineVectors
        /// speexdsp for every ratio.
        case speexdsp
    }

    /// Creates a resampler with a chosen converter.
    public init(
        inputRate: Int, outputRate: Int, channels: Int, quality: Quality, engine: Engine
    ) throws(ResamplerError) {
        guard let inputRate32 = UInt32(exactly: inputRate), let outputRate32 = UInt32(exactly: outputRate),
            inputRate > 0, outputRate > 0, Double(outputRate) / Double(inputRate) <= 256,
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
        let divisor = Self.greatestCommonDivisor(inputRate, outputRate)
        inputCycle = inputRate / divisor
        outputCycle = outputRate / divisor
        if inputRate == outputRate {
            state = nil
            filter = nil
            latency = 0
        } else if quality == .fastest, engine != .speexdsp,
            let polyphase = PolyphaseFilter(
                inputRate: inputRate, outputRate: outputRate, channels: channels, wide: engine == .automatic)
        {
            state = nil
            filter = polyphase
            latency = polyphase.latency
        } else {
            filter = nil
            var status: Int32 = 0
            let created = speex_resampler_init(
                UInt32(channels), inputRate32, outputRate32, quality.speexQuality, &status)
            try Self.check(status, "speex_resampler_init")
            guard let created else {
                throw ResamplerError(code: .library, message: "speex_resampler_init: no state")
            }
            state = created
            latency = Int(speex_resampler_get_input_latency(created))
        }
        zeros = [Float](repeating: 0, count: latency * channels)
        if let state {
            // Fully initialised, so deinit frees the state if this throws.
            try Self.check(speex_resampler_skip_zeros(state), "speex_resampler_skip_zeros")
        }
    }

    deinit {
        if let state { speex_resampler_destroy(state) }
    }

    /// The most output frames `inputFrames` of input can produce in one call.
    public func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        // A flush also releases the `latency` frames held back; one more covers floating-point rounding.
        Int((Double(inputFrames + latency) * ratio).rounded(.up)) + 1
    }

    /// Converts interleaved input; returns the frames written to `output` (sized by `maximumOutputFrames`).
    /// `endOfInput` also releases the tail the filter holds back and starts the next call afresh.
    @discardableResult
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>, endOfInput: Bool = false
    ) -> Int {
        let inputFrames = input.count / channels
        let outputCapacity = output.count / channels
        guard let destination = output.baseAddress, outputCapacity > 0 else {
            if endOfInput { reset() }
            return 0
        }
        guard state != nil || filter != nil else {
            let frames = min(inputFrames, outputCapacity)
            if frames > 0, let source = input.baseAddress {
                destination.update(from: source, count: frames * channels)
            }
            return frames
        }
        var written = 0
        if inputFrames > 0, let source = input.baseAddress {
            let step = run(source, frames: inputFrames, into: destination, capacity: outputCapacity)
            consumed += step.consumed
            produced += step.produced
            written = step.produced
            let cycles = min(consumed / inputCycle, produced / outputCycle)
            consumed -= cycles * inputCycle
            produced -= cycles * outputCycle
        }
        if endOfInput {
            // speex has no flush: silence pushes the tail out, and only the output frames that
            // fall before the end of the real input are kept.
            let owed = (consumed * outputCycle + inputCycle - 1) / inputCycle - produced
            let wanted = min(owed, outputCapacity - written)
            if wanted > 0 {
                let tail = destination + written * channels
                written += zeros.withUnsafeBufferPointer { silence in
                    guard let silence = silence.baseAddress else { return 0 }
                    return run(silence, frames: latency, into: tail, capacity: wanted).produced
                }
            }
            reset()
        }
        return written
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
        filter?.reset()
        consumed = 0
        produced = 0
        guard let state else { return }
        // Neither fails on a state that was created, and reset cannot report it to its callers.
        try? Self.check(speex_resampler_reset_mem(state), "speex_resampler_reset_mem")
        try? Self.check(speex_resampler_skip_zeros(state), "speex_resampler_skip_zeros")
    }

    /// Feeds `frames` frames of `input` until they are used or `capacity` output frames are written.
    private func run(
        _ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int
    ) -> (consumed: Int, produced: Int) {
        if let filter { return filter.run(input, frames: frames, into: output, capacity: capacity) }
        guard let state else { return (0, 0) }
        var used = 0
        var made = 0
        // speex stops short of the input when the output fills; loop until it is all used.
        while used < frames && made < capacity {
            var inputLength = UInt32(clamping: frames - used)
            var outputLength = UInt32(clamping: capacity - made)
            do {
                try Self.check(
                    speex_resampler_process_interleaved_float(
                        state, input + used * channels, &inputLength, output + made * channels, &outputLength),
                    "speex_resampler_process_interleaved_float")
            } catch {
                break
            }
            used += Int(inputLength)
            made += Int(outputLength)
            if inputLength == 0 && outputLength == 0 { break }
        }
        return (used, made)
    }

    /// Turns a speexdsp status into an error naming the call.
    private static func check(_ status: Int32, _ call: StaticString) throws(ResamplerError) {
        guard status != RESAMPLER_ERR_SUCCESS else { return }
        throw ResamplerError(code: .library, message: "\(call): \(String(cString: speex_resampler_strerror(status)))")
    }

    /// The greatest common divisor of two rates (their ratio in lowest terms is what filters cycle on).
    static func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }
}
