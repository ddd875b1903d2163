/// Work buffers of the capture fan-out, allocated once and grown only when a period needs more.
///
/// Used only on the capture thread (inside the hub's lock); groups share it because they run one
/// after another.
final class CaptureScratch {
    private(set) var mixed = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4096)
    private(set) var resampled = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4096)
    private(set) var encoded = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 16384)

    deinit {
        mixed.deallocate()
        resampled.deallocate()
        encoded.deallocate()
    }

    /// Makes every buffer at least the given size (in elements).
    func reserve(mixed mixedCount: Int, resampled resampledCount: Int, encoded encodedCount: Int) {
        if mixed.count < mixedCount {
            mixed.deallocate()
            mixed = .allocate(capacity: mixedCount)
        }
        if resampled.count < resampledCount {
            resampled.deallocate()
            resampled = .allocate(capacity: resampledCount)
        }
        if encoded.count < encodedCount {
            encoded.deallocate()
            encoded = .allocate(capacity: encodedCount)
        }
    }
}
