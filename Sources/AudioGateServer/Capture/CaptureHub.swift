import AudioGateCore
import AudioGateDevices
import Logging
import Synchronization

/// Receives every captured period on the capture thread and fans it out to subscribers.
///
/// One group per distinct client format shares one resampler; each subscriber has its own
/// bounded queue, so a slow client only ever loses its own oldest audio.
public final class CaptureHub: CaptureSink {
    /// What the capture thread works on; clients take this lock only to swap in the group list or
    /// a group's members they built outside it.
    struct Core {
        /// Replaced whole, never changed in place; the same list as `Registry.groups`.
        var groups: [CaptureGroup] = []
        let scratch = CaptureScratch()
        var hardware: AudioFormat?
        var level = LevelMeter()
        var levelFrames = 0
        var deviceLost = false
        var lastXruns: Int?
        /// Set when frames were lost (xrun, outage); the next period's timestamp measures the gap.
        var discontinuity = false
        var expectedNext: UInt64?
        /// The event loops this period's chunks go to, each woken once when the period is done.
        var drains = CaptureDrains()
    }

    /// The groups as clients change them; the capture thread never takes this lock, so what a join
    /// or leave builds (the next list, a group's next members) is built under it, not under `core`.
    struct Registry {
        var groups: [CaptureGroup] = []

        /// The group of a client's format and processing.
        func group(for parameters: CaptureParameters) -> CaptureGroup? {
            groups.first { $0.format == parameters.format && $0.processing == parameters.processing }
        }
    }

    /// What readers (status, metrics) see without touching the capture thread's lock.
    struct Published {
        var lastLevel = (rms: LevelMeter.floorDBFS, peak: LevelMeter.floorDBFS)
        var lostNanoseconds: UInt64 = 0
        var deviceLost = false
    }

    /// Capture timestamps that jump by less than this are clock jitter, not lost audio.
    static let jitterNanoseconds: UInt64 = 25_000_000

    let core: Mutex<Core>
    /// Taken before `core` by joins and leaves, one at a time.
    let registry = Mutex(Registry())
    let published = Mutex(Published())
    /// Every subscriber, for status; never touched by the capture thread.
    let members = Mutex<[CaptureSubscriber]>([])
    /// The last `music` message, for clients that ask for music events after it was sent.
    let music = Mutex<String?>(nil)
    let nextID = Atomic<Int>(1)
    /// One batch per NIO event loop that has WebSocket capture clients (event loops are few and fixed).
    let loopDrains = Mutex<[ObjectIdentifier: CaptureDrain]>([:])
    let limits: ServerConfiguration.Limits
    let quality: Resampler.Quality
    let metrics: CaptureMetrics
    let logger: Logger
    /// What the speaker plays, for echo cancellation.
    let echoReference: EchoReference
    /// Stops the capture device while nobody listens; subscribing wakes it.
    public let demand: DeviceDemand
    /// Whether any group exists, read by the capture thread every period without the lock.
    let listening = Atomic<Bool>(false)
    /// The shortest chunk any subscriber takes, in ms: how much audio the capture thread may read at once.
    let shortestChunk = Atomic<Int>(Int.max)
    /// The shared encoders of compressed capture streams.
    let encoders = CaptureEncoders()

    public init(
        configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger,
        echoReference: EchoReference = EchoReference()
    ) {
        self.echoReference = echoReference
        demand = DeviceDemand(idleMilliseconds: configuration.deviceIdleMilliseconds)
        limits = configuration.limits
        quality = configuration.resamplerQuality
        self.metrics = CaptureMetrics(registry: metrics.registry)
        self.logger = logger
        core = Mutex(Core())
    }

    // MARK: - Status

    /// The level of the last 50 ms of captured audio in dBFS.
    public var lastLevel: (rms: Double, peak: Double) { published.withLock { $0.lastLevel } }

    /// Connected subscribers.
    public var subscriberCount: Int { members.withLock { $0.count } }

    /// Connected subscribers, oldest first.
    public var subscribers: [CaptureSubscriber] { members.withLock { $0 } }

    /// Milliseconds of capture lost to xruns and device outages since start.
    public var lostMilliseconds: Double { Double(published.withLock { $0.lostNanoseconds }) / 1e6 }

    /// Whether the capture device is currently lost (clients were told `device lost`).
    public var isDeviceLost: Bool { published.withLock { $0.deviceLost } }
}
