import AudioGateCore
import Foundation
import Synchronization

/// Start/stop plumbing shared by the device loops: the thread, a stop flag and interruptible sleeps.
final class DeviceLoopControl: Sendable {
    private let stopFlag = Atomic<Bool>(false)
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
        demand?.wake()
        let running = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        await running?.join()
    }

    /// Sleeps in short slices so a stop request is honoured within 20 ms.
    func sleep(milliseconds: Int) {
        var left = milliseconds
        while left > 0 && !stopRequested {
            let slice = min(left, 20)
            Thread.sleep(forTimeInterval: Double(slice) / 1000)
            left -= slice
        }
    }
}
