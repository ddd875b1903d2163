import AudioGateCore

/// Period-sized buffers for one open device, allocated on open so the I/O path never allocates.
final class DeviceBuffers {
    let raw: UnsafeMutableRawBufferPointer
    let samples: UnsafeMutableBufferPointer<Float>
    let format: AudioFormat
    let periodFrames: Int
    let bufferFrames: Int

    init(_ negotiated: NegotiatedFormat) {
        format = negotiated.format
        periodFrames = negotiated.periodFrames
        bufferFrames = negotiated.bufferFrames
        raw = .allocate(byteCount: format.bytesPerFrame * periodFrames, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        samples = .allocate(capacity: format.channels * periodFrames)
        samples.initialize(repeating: 0)
    }

    deinit {
        raw.deallocate()
        samples.deallocate()
    }
}
