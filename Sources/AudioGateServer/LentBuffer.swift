/// Lets a caller hand its own buffer to code running inside a `Mutex` critical section.
///
/// `@unchecked Sendable` is safe here because the buffer never escapes: it is created from memory
/// the calling thread owns, used synchronously inside the lock by that same thread, and dropped
/// before the call returns, so no other thread ever sees it.
struct LentBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>

    init(_ buffer: UnsafeMutableBufferPointer<Element>) { self.buffer = buffer }

    init(_ buffer: UnsafeBufferPointer<Element>) { self.buffer = UnsafeMutableBufferPointer(mutating: buffer) }

    var readOnly: UnsafeBufferPointer<Element> { UnsafeBufferPointer(buffer) }
}
