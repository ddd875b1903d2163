import AudioGateCore
import Logging
import ServiceLifecycle

/// The one skeleton of the capture and playback threads: open, then transfer until an error,
/// recover from it in place as alsa-utils `aplay` and PipeWire do (`Recovery`), or close and
/// reopen by name after a back-off (`Backoff`). A loop configures it with what one transfer is
/// (a read or a write) and what an open and a recovery mean to its sink or source.
///
/// The skeleton owns the device's one `DeviceClock`, reset on every open and every error, which
/// the transfer feeds and hands on.
protocol DeviceLoop: Service, Sendable {
    /// What a transfer keeps between calls, across reopens (the playback frame count does).
    associatedtype TransferState

    var control: DeviceLoopControl { get }
    var opener: DeviceOpener { get }
    var request: PCMRequest { get }
    /// Stops the device while unused; a stop request must wake it.
    var demand: DeviceDemand? { get }
    var monitor: DeviceMonitor { get }
    var logger: Logger { get }
    /// Capture or playback, for log messages.
    static var direction: PCMDirection { get }
    /// The thread's name, as `top -H` and debuggers show it; Linux refuses names over 15 bytes.
    static var threadName: String { get }
    /// How the device's clock settles.
    static var clockTuning: DeviceClock.Tuning { get }

    /// The state before the first open.
    func initialState() -> TransferState
    /// A stream opened (and, for capture, started): `status` is its new state, not yet reported.
    func opened(_ stream: any PCMStream, buffers: DeviceBuffers, status: DeviceStatus, state: inout TransferState)
    /// One wait and one read or write; errors go to the recovery.
    func transfer(
        _ stream: any PCMStream, buffers: DeviceBuffers, clock: inout DeviceClock, state: inout TransferState
    ) throws(ALSAError)
    /// The stream recovered in place from `error`.
    func resumed(after error: ALSAError, buffers: DeviceBuffers, state: inout TransferState)
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

    /// The thread's body; returns once `control.stopRequested`.
    func loop() {
        var backoff = Backoff()
        var open: (stream: any PCMStream, buffers: DeviceBuffers)?
        var opened = 0
        var clock = DeviceClock(tuning: Self.clockTuning)
        var state = initialState()
        let name = Self.direction.rawValue

        while !control.stopRequested {
            guard let (stream, buffers) = open else {
                do {
                    let fresh = try opener.open(Self.direction, request: request)
                    if Self.direction == .capture { try fresh.start() }
                    let io = DeviceBuffers(fresh.negotiated)
                    open = (fresh, io)
                    clock.reset()
                    backoff.reset()
                    let status = monitor.opened(fresh.negotiated, isReopen: opened > 0)
                    opened += 1
                    logger.info("\(name) device open", metadata: ["device": "\(opener.name)", "format": "\(fresh.negotiated)"])
                    self.opened(fresh, buffers: io, status: status, state: &state)
                    report(status)
                } catch {
                    fail(error, backoff: &backoff)
                }
                continue
            }
            do throws(ALSAError) {
                try transfer(stream, buffers: buffers, clock: &clock, state: &state)
            } catch {
                // After an xrun, a suspend or a loss the frame count no longer dates the device as it did.
                if error.code != .wouldBlock { clock.reset() }
                switch Recovery.recover(from: error, stream: stream, direction: Self.direction, monitor: monitor) {
                case .resumed:
                    resumed(after: error, buffers: buffers, state: &state)
                    if error.code == .xrun || error.code == .suspended {
                        logger.debug("\(name) recovered", metadata: ["error": "\(error)"])
                        report(monitor.snapshot)
                    }
                case .reopen:
                    logger.warning("\(name) device lost", metadata: ["error": "\(error)"])
                    open = nil
                    fail(error, backoff: &backoff)
                }
            }
        }
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

    /// Waits for the stream, counting the time towards a stall: a device that does nothing for
    /// `stallMilliseconds` is treated as dead. True when it is ready.
    func waitCountingStall(
        _ stream: any PCMStream, waited milliseconds: inout Int, stallMilliseconds: Int, what: String
    ) throws(ALSAError) -> Bool {
        if try stream.wait(timeoutMilliseconds: 100) { return true }
        milliseconds += 100
        if milliseconds >= stallMilliseconds {
            throw ALSAError(code: .failed, call: "snd_pcm_wait", message: "\(what) for \(stallMilliseconds / 1000) s: device stalled")
        }
        return false
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
