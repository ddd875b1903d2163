import AudioGateCore
import AudioGateDevices

/// One producer's audio on its way to the mix format: partial frames carried to the next piece,
/// samples decoded to float, resampled to the mix rate and remixed to the mix channels.
///
/// Owned by one `PlaybackIngest` and used under its lock; not thread-safe on its own.
struct PlaybackConverter {
    let quality: Resampler.Quality
    private var resampler: Resampler?
    private var client: AudioFormat?
    private var mix: AudioFormat?
    /// The start of a frame whose other bytes have not arrived yet.
    private var carry: [UInt8] = []
    private var decoded: [Float] = []
    private var resampled: [Float] = []
    private var remixed: [Float] = []
    /// Client frames fed to the current resampler and mix frames it gave back: the difference is
    /// what it still holds (its latency).
    private var inputFrames: UInt64 = 0
    private var outputFrames: UInt64 = 0

    init(quality: Resampler.Quality) {
        self.quality = quality
    }

    /// Mix frames the resampler still holds for what it was fed.
    var pendingFrames: UInt64 {
        guard let client, let mix, client.rate > 0 else { return 0 }
        let expected = UInt64((Double(inputFrames) * Double(mix.rate) / Double(client.rate)).rounded())
        return expected > outputFrames ? expected - outputFrames : 0
    }

    /// Bytes of a frame held back for the next piece.
    var carriedBytes: Int { carry.count }

    /// Converts `raw` (bytes of `format`, any length: a partial frame is kept for the next call)
    /// to `mix`, handing each converted run to `output`.
    mutating func convert(
        _ raw: UnsafeRawBufferPointer, format: AudioFormat, mix: AudioFormat,
        output: (UnsafeBufferPointer<Float>) -> Void
    ) {
        prepare(client: format, mix: mix, output: output)
        let bytesPerFrame = format.bytesPerFrame
        var offset = 0
        if !carry.isEmpty {
            let taken = min(bytesPerFrame - carry.count, raw.count)
            carry.append(contentsOf: raw[0..<taken])
            offset = taken
            guard carry.count == bytesPerFrame else { return }
            var frame = carry
            carry.removeAll(keepingCapacity: true)
            frame.withUnsafeBytes { convertWhole($0, format: format, output: output) }
            frame.removeAll()
        }
        let whole = (raw.count - offset) / bytesPerFrame * bytesPerFrame
        if whole > 0 {
            convertWhole(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + whole)]), format: format, output: output)
        }
        if offset + whole < raw.count { carry.append(contentsOf: raw[(offset + whole)...]) }
    }

    /// The producer's audio ended: hands over what the resampler still holds and starts the next
    /// piece afresh. A partial frame left over is dropped.
    mutating func finish(output: (UnsafeBufferPointer<Float>) -> Void) {
        carry.removeAll()
        guard resampler != nil else { return }
        convertDecoded(frames: 0, endOfInput: true, output: output)
        resampler?.reset()
        inputFrames = 0
        outputFrames = 0
    }

    /// Forgets the resampler's history (the stream was cleared: what it held was flushed with the
    /// queue). A partial frame stays: the producer's next bytes complete it.
    mutating func resetResampler() {
        resampler?.reset()
        inputFrames = 0
        outputFrames = 0
    }

    /// Forgets everything in flight (the producer's own clear): the carried bytes too.
    mutating func reset() {
        carry.removeAll()
        resetResampler()
    }

    /// Drops a partial frame (a new format starts with whole frames).
    mutating func dropPartialFrame() {
        carry.removeAll()
    }

    private mutating func convertWhole(
        _ raw: UnsafeRawBufferPointer, format: AudioFormat, output: (UnsafeBufferPointer<Float>) -> Void
    ) {
        let frames = raw.count / format.bytesPerFrame
        let sampleCount = frames * format.channels
        if decoded.count < sampleCount { decoded = [Float](repeating: 0, count: sampleCount) }
        decoded.withUnsafeMutableBufferPointer { decoded in
            _ = SampleConversion.decode(raw, format: format.sampleFormat, into: decoded)
        }
        inputFrames += UInt64(frames)
        convertDecoded(frames: frames, endOfInput: false, output: output)
    }

    /// Resamples `frames` decoded frames, remixes them and hands them on.
    private mutating func convertDecoded(frames: Int, endOfInput: Bool, output: (UnsafeBufferPointer<Float>) -> Void) {
        guard let resampler, let client, let mix else { return }
        let clientChannels = client.channels
        let outputCapacity = resampler.maximumOutputFrames(forInputFrames: frames)
        if resampled.count < outputCapacity * clientChannels {
            resampled = [Float](repeating: 0, count: outputCapacity * clientChannels)
        }
        let produced = decoded.withUnsafeBufferPointer { decoded in
            resampled.withUnsafeMutableBufferPointer { resampled in
                resampler.process(
                    UnsafeBufferPointer(rebasing: decoded[0..<(frames * clientChannels)]),
                    into: UnsafeMutableBufferPointer(rebasing: resampled[0..<(outputCapacity * clientChannels)]),
                    endOfInput: endOfInput)
            }
        }
        guard produced > 0 else { return }
        outputFrames += UInt64(produced)
        let mixChannels = mix.channels
        if remixed.count < produced * mixChannels { remixed = [Float](repeating: 0, count: produced * mixChannels) }
        let remixedFrames = resampled.withUnsafeBufferPointer { resampled in
            remixed.withUnsafeMutableBufferPointer { remixed in
                ChannelMixer.remix(
                    UnsafeBufferPointer(rebasing: resampled[0..<(produced * clientChannels)]), from: clientChannels,
                    to: mixChannels, into: remixed)
            }
        }
        remixed.withUnsafeBufferPointer { output(UnsafeBufferPointer(rebasing: $0[0..<(remixedFrames * mixChannels)])) }
    }

    /// Builds or rebuilds the resampler when the client or the mix format changed.
    private mutating func prepare(client: AudioFormat, mix: AudioFormat, output: (UnsafeBufferPointer<Float>) -> Void) {
        let mixChanged = self.mix.map { $0.rate != mix.rate || $0.channels != mix.channels } ?? true
        let clientChanged = self.client.map { $0 != client } ?? true
        guard mixChanged || clientChanged || resampler == nil else { return }
        if !mixChanged, resampler != nil, let old = self.client,
            old.rate != client.rate || old.channels != client.channels
        {
            // Same output: let the old converter finish its tail so the switch is seamless.
            convertDecoded(frames: 0, endOfInput: true, output: output)
        }
        if clientChanged { carry.removeAll() }
        let rebuild = mixChanged || resampler == nil || self.client.map { $0.rate != client.rate || $0.channels != client.channels } ?? true
        self.client = client
        self.mix = mix
        guard rebuild else { return }
        resampler = try? Resampler(inputRate: client.rate, outputRate: mix.rate, channels: client.channels, quality: quality)
        inputFrames = 0
        outputFrames = 0
    }
}
