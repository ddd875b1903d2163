import Synchronization

/// The shared, lock-protected status of one device loop; the loop writes, anyone reads.
public final class DeviceMonitor: Sendable {
    private let status: Mutex<DeviceStatus>

    public init(name: String, direction: PCMDirection) {
        status = Mutex(DeviceStatus(name: name, direction: direction))
    }

    /// The current status.
    public var snapshot: DeviceStatus { status.withLock { $0 } }

    func update<T>(_ body: (inout DeviceStatus) -> T) -> T {
        status.withLock { body(&$0) }
    }
}

extension DeviceMonitor {
    /// Records a successful open and returns the new status.
    func opened(_ negotiated: NegotiatedFormat, isReopen: Bool) -> DeviceStatus {
        update { status in
            status.state = .running
            status.negotiated = negotiated
            if isReopen { status.reopens += 1 }
            return status
        }
    }

    /// Records a stop for want of users (or the restart after it) and returns the new status.
    func idled(_ idle: Bool) -> DeviceStatus {
        update { status in
            status.state = idle ? .idle : .running
            return status
        }
    }

    /// Records a failed open or a lost device and returns the new status.
    func failed(_ error: ALSAError, unavailable: Bool) -> DeviceStatus {
        update { status in
            status.state = unavailable ? .unavailable : .recovering
            status.lastError = error.description
            return status
        }
    }
}
