import CMalloc
import Dispatch
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The process entry: runs the command on the event loops while the main thread waits.
///
/// An async `main` parks the main thread in libdispatch's `dispatch_main`, where valgrind 3.19
/// faults; a plain semaphore wait lets `valgrind --tool=callgrind` profile the shipped binary.
@main
enum AudioGateMain {
    static func main() {
        boundHeapArenas()
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

    /// glibc gives each new thread whichever of its arenas is free, up to eight per core, and an
    /// arena keeps what its threads freed up to its high-water mark. The server starts a short
    /// thread for each compressed file and each text spoken, so those threads wander over many
    /// arenas and each climbs to the high-water of whatever ran on it: megabytes resident for
    /// nothing on a board that runs all day. Two arenas (the main one and one more) keep that
    /// memory in two heaps; small allocations still come from each thread's own cache unlocked.
    /// An arena count the user set (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in
    /// `GLIBC_TUNABLES`) is left as it is.
    private static func boundHeapArenas() {
        #if canImport(Glibc)
        if getenv("MALLOC_ARENA_MAX") != nil { return }
        if let tunables = getenv("GLIBC_TUNABLES"), String(cString: tunables).contains("glibc.malloc.arena_max") {
            return
        }
        _ = mallopt(M_ARENA_MAX, 2)
        #endif
    }
}
