import AudioGateCore

/// I/O buffers for one open device, allocated on open so the I/O path never allocates: room for the
/// whole ring buffer, the most one read can return.
final class DeviceBuffers {
    let raw: UnsafeMutableRawBufferPointer
    let samples: UnsafeMutableBufferPointer<Float>
    let format: AudioFormat
    let periodFrames: Int
    let bufferFrames: Int
    /// Frames the buffers hold.
    let capacityFrames: Int

    init(_ negotiated: NegotiatedFormat) {
        format = negotiated.format
        periodFrames = negotiated.periodFrames
        bufferFrames = negotiated.bufferFrames
        capacityFrames = max(periodFrames, bufferFrames)
        raw = .allocate(byteCount: format.bytesPerFrame * capacityFrames, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        samples = .allocate(capacity: format.channels * capacityFrames)
        samples.initialize(repeating: 0)
    }

    /// Frames to wait for before reading: `milliseconds` of audio in whole periods, at least one
    /// and at most half the buffer, so a late wake-up still finds room before an overrun.
    func wakeFrames(batchMilliseconds milliseconds: Int) -> Int {
        let wanted = milliseconds <= 0 ? 0 : Int(min(Int64(milliseconds), 60_000) * Int64(format.rate) / 1000)
        let periods = max(1, min(wanted / periodFrames, bufferFrames / periodFrames / 2))
        return periods * periodFrames
    }

    deinit {
        raw.deallocate()
        samples.deallocate()
    }
}
