/// A caller's buffer lent to a closure that runs inside a lock, for one synchronous call.
///
/// `@unchecked Sendable`: without it region isolation ties the caller's pointer to the locked
/// state for good. Safe because the buffer is only used during the call and never stored.
struct CaptureBorrowedBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeBufferPointer<Element>

    init(_ buffer: UnsafeBufferPointer<Element>) { self.buffer = buffer }
}

/// The writable twin of `CaptureBorrowedBuffer`, under the same rule.
struct CaptureBorrowedMutableBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>

    init(_ buffer: UnsafeMutableBufferPointer<Element>) { self.buffer = buffer }
}
