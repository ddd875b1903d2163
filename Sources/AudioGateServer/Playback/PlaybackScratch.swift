/// A float buffer owned by the playback thread's render state, allocated off the steady path.
final class PlaybackScratch {
    let buffer: UnsafeMutableBufferPointer<Float>

    init(capacity: Int) {
        buffer = .allocate(capacity: max(capacity, 1))
        buffer.initialize(repeating: 0)
    }

    var capacity: Int { buffer.count }

    deinit { buffer.deallocate() }
}
