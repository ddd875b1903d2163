import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A named OS thread for blocking work (device I/O, C libraries that block or run long), joinable
/// from async code. Every thread the server starts is one of these.
public final class WorkerThread: Sendable {
    /// The thread's name as the kernel shows it (at most 15 bytes are kept).
    public let name: String
    private let finished = OneShot<Void>()

    /// Starts `body` on a new thread (1 MiB of stack unless `stackSize` says more).
    public init(name: String, stackSize: Int = 1 << 20, body: @escaping @Sendable () -> Void) {
        self.name = name
        let finished = finished
        let thread = Thread {
            WorkerThread.nameCurrentThread(name)
            body()
            finished.fulfill(())
        }
        thread.stackSize = stackSize
        thread.start()
    }

    /// Names the calling thread where the kernel keeps it. Foundation's `Thread.name`, set from
    /// inside, reaches the kernel only once `start` has recorded the thread's handle, which a new
    /// thread that runs before its creator resumes (a loaded machine) has not: written here directly.
    static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        #else
        Thread.current.name = name
        #endif
    }

    /// Returns once the thread's body has returned.
    public func join() async {
        await finished.waitIgnoringCancellation()
    }

    /// Whether the body has returned.
    public var isFinished: Bool { finished.value != nil }
}
