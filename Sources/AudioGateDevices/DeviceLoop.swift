import Logging
import ServiceLifecycle

/// What the capture and playback loops share: a dedicated thread started and stopped through
/// `DeviceLoopControl`, run as a `Service` that ends on graceful shutdown.
protocol DeviceLoop: Service, Sendable {
    var control: DeviceLoopControl { get }
    /// Stops the device while unused; a stop request must wake it.
    var demand: DeviceDemand? { get }
    var monitor: DeviceMonitor { get }
    var logger: Logger { get }
    /// Capture or playback, for log messages.
    static var direction: PCMDirection { get }
    /// The thread's name, as `top -H` and debuggers show it; Linux refuses names over 15 bytes.
    static var threadName: String { get }
    /// The thread's body; returns once `control.stopRequested`.
    func loop()
    /// Tells the sink or source that the device state changed.
    func report(_ status: DeviceStatus)
}

extension DeviceLoop {
    /// Starts the thread (idempotent).
    public func start() {
        control.start(name: Self.threadName) { [self] in loop() }
    }

    /// Stops the thread and waits for it.
    public func stop() async {
        await control.stop(waking: demand)
    }

    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }

    /// Stops the device for want of users, parks until `inUse()` (or a touch of `demand`), and
    /// restarts it as recovery does: `prepare`, then `start` for capture.
    func sleepWhileUnused(_ stream: any PCMStream, demand: DeviceDemand, inUse: () -> Bool) throws(ALSAError) {
        try stream.stop()
        logger.debug("\(Self.direction.rawValue) device idle: stopped until a client needs it")
        report(monitor.idled(true))
        demand.park(until: inUse, stopRequested: { control.stopRequested })
        guard !control.stopRequested else { return }
        try stream.prepare()
        if Self.direction == .capture { try stream.start() }
        report(monitor.idled(false))
    }

    /// Records a failed open or a lost device, reports it, and waits out the next backoff step.
    func fail(_ error: ALSAError, backoff: inout Backoff) {
        let delay = backoff.next()
        let status = monitor.failed(error, unavailable: backoff.exhausted)
        if backoff.failures == 1 {
            logger.warning(
                "\(Self.direction.rawValue) device '\(monitor.snapshot.name)' unavailable; waiting for it (retrying up to every 2 s)",
                metadata: ["error": "\(error)", "retry_ms": "\(delay)"])
        }
        report(status)
        control.sleep(milliseconds: delay)
    }
}
