import ServiceLifecycle

/// What the capture and playback loops share: a dedicated thread started and stopped through
/// `DeviceLoopControl`, run as a `Service` that ends on graceful shutdown.
protocol DeviceLoop: Service, Sendable {
    var control: DeviceLoopControl { get }
    /// The thread's name, as `top -H` and debuggers show it.
    static var threadName: String { get }
    /// The thread's body; returns once `control.stopRequested`.
    func loop()
}

extension DeviceLoop {
    /// Starts the thread (idempotent).
    public func start() {
        control.start(name: Self.threadName) { [self] in loop() }
    }

    /// Stops the thread and waits for it.
    public func stop() async {
        await control.stop()
    }

    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }
}
