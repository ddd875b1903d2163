import Foundation

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
            // On Linux a name set before `start` never reaches the kernel; set from inside, it does.
            Thread.current.name = name
            body()
            finished.fulfill(())
        }
        thread.stackSize = stackSize
        thread.start()
    }

    /// Returns once the thread's body has returned.
    public func join() async {
        await finished.waitIgnoringCancellation()
    }

    /// Whether the body has returned.
    public var isFinished: Bool { finished.value != nil }
}
