import AudioGateCore
import Synchronization

/// Start/stop plumbing shared by the device loops: the thread, a stop flag and back-off sleeps that
/// a stop cuts short.
final class DeviceLoopControl: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    /// Wakes a back-off sleep when a stop is requested.
    private let wakeup = ThreadWakeup()
    private let thread = Mutex<WorkerThread?>(nil)

    var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    func start(name: String, body: @escaping @Sendable () -> Void) {
        thread.withLock { thread in
            guard thread == nil else { return }
            stopFlag.store(false, ordering: .releasing)
            thread = WorkerThread(name: name, body: body)
        }
    }

    /// Stops the thread, waking it first if it is parked in `demand`.
    func stop(waking demand: DeviceDemand? = nil) async {
        stopFlag.store(true, ordering: .sequentiallyConsistent)
        wakeup.signal()
        demand?.wake()
        let running = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        await running?.join()
    }

    /// Sleeps for a recovery back-off; a stop request wakes it at once.
    func sleep(milliseconds: Int) {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while !stopRequested {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            // A wake left over from an earlier stop only costs another look at the flag.
            _ = wakeup.wait(timeout: left)
        }
    }
}
