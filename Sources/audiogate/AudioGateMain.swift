import Dispatch

/// The process entry: runs the command on the concurrency pool while the main thread waits.
///
/// An async `main` parks the main thread in libdispatch's `dispatch_main`, where valgrind 3.19
/// faults; a plain semaphore wait lets `valgrind --tool=callgrind` profile the shipped binary.
@main
enum AudioGateMain {
    static func main() {
        let done = DispatchSemaphore(value: 0)
        // Detached: a task made here would inherit the main actor, whose thread waits below.
        Task.detached {
            await AudioGateCommand.main()
            done.signal()
        }
        done.wait()
    }
}
