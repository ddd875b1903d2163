import Dispatch
import NIOCore
import NIOPosix

/// The process entry: runs the command on the event loops while the main thread waits.
///
/// An async `main` parks the main thread in libdispatch's `dispatch_main`, where valgrind 3.19
/// faults; a plain semaphore wait lets `valgrind --tool=callgrind` profile the shipped binary.
@main
enum AudioGateMain {
    static func main() {
        // Tasks run on the NIO event loops instead of a pool of their own: a WebSocket message read
        // by an event loop is handled by a task on the same thread, not handed to another and back.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let done = DispatchSemaphore(value: 0)
        // Detached: a task made here would inherit the main actor, whose thread waits below.
        Task.detached {
            await AudioGateCommand.main()
            done.signal()
        }
        done.wait()
    }
}
