import AudioGateCore
import AudioGateDevices
import CWebRTCAudio
import Foundation
import Synchronization

/// The processing of one capture group (one client format and one setting) on its own thread.
///
/// The capture thread only copies the group's resampled audio into the inbox and signals; the
/// processing thread cuts it into 10 ms frames, feeds the canceller the echo reference for the
/// same capture time, processes, and appends the result to the group's subscribers. So a canceller
/// never runs on the device thread, and one runs per setting however many clients share it.
final class VoiceChannel: Sendable {
    /// Audio the processing thread has not taken yet; the capture thread writes it.
    private struct Inbox {
        let samples: RingBuffer<Float>
        /// Capture time (monotonic ns) of the first queued sample.
        var start = 0.0
        var ready: UInt64 = 0
        var subscribers: [CaptureSubscriber] = []
        var reset = false
        var closed = false
    }

    /// What only the processing thread touches (kept in a lock it alone takes, uncontended).
    struct Worker {
        let processor: VoiceProcessor
        var frame: [Float]
        var reference: [Float]
        var encoded: [UInt8]
        var deviceChunk: [Float] = []
        var resampled: [Float] = []
        var fifo: RingBuffer<Float>
        var resampler: Resampler?
        var resamplerRate = 0
        /// Next device frame to read from the echo reference.
        var cursor: Double?
        var activity = VoiceActivity()
        var returnLoss = EchoReturnLoss()
        /// Frames of audible reference the canceller has seen (until it has converged).
        var farEndFrames = 0
        /// Frames since the reference was last audible (its echo lingers in the room a while).
        var sinceFarEnd = Int.max
        /// Audible reference frames since the speaker last started after a pause.
        var farEndRun = 0
        /// The echo reference's timing epoch the canceller has learned on.
        var referenceEpoch: UInt64?
        /// The speaker's timing changed since the canceller learned the echo path.
        var echoPathMoved = false
    }

    /// The group's client format (mono, at a processing rate).
    let format: AudioFormat
    /// What runs.
    let processing: VoiceProcessing
    let quality: Resampler.Quality
    let echo: EchoReference
    private let inbox: Mutex<Inbox>
    private let worker: Mutex<Worker>
    private let wake = ThreadWakeup()
    /// Where the processing thread stands.
    private enum Lifecycle {
        /// Built, not started: the group is not in the hub's list yet (or was discarded).
        case idle
        case running(WorkerThread)
        /// Told to stop; a thread that ran ends after its current frame.
        case closed
    }

    private let lifecycle = Mutex(Lifecycle.idle)
    private let nanosecondsPerFrame: Double
    /// Reference further than this from the timeline re-syncs it (device reopen, xrun, a jump).
    static let resyncMilliseconds = 20.0
    /// Reference frames the canceller needs before its residual echo is too quiet to look like speech.
    static let warmUpFrames = 30
    /// Frames at the start of each stretch of playback during which the detector does not count.
    static let restartFrames = 15
    /// Frames after the reference goes quiet during which its echo may still be in the room.
    static let echoTailFrames = 30
    /// Reference quieter than this is silence to the warm-up count, in dBFS.
    static let farEndFloorDBFS = -60.0
    /// Audio waiting to be processed before the oldest is dropped (the thread could not keep up).
    static let inboxMilliseconds = 500

    init(format: AudioFormat, processing: VoiceProcessing, echo: EchoReference, quality: Resampler.Quality)
        throws(VoiceProcessingError)
    {
        self.format = format
        self.processing = processing
        self.quality = quality
        self.echo = echo
        nanosecondsPerFrame = 1e9 / Double(format.rate)
        let processor = try VoiceProcessor(rate: format.rate, processing: processing)
        let frameSize = processor.frameSize
        inbox = Mutex(Inbox(samples: RingBuffer(capacity: format.rate * Self.inboxMilliseconds / 1000)))
        worker = Mutex(
            Worker(
                processor: processor, frame: [Float](repeating: 0, count: frameSize),
                reference: [Float](repeating: 0, count: frameSize),
                encoded: [UInt8](repeating: 0, count: frameSize * format.sampleFormat.bytesPerSample),
                fifo: RingBuffer(capacity: frameSize * 4)))
    }

    // MARK: - Lifecycle

    /// Starts the processing thread (no-op once started or closed).
    func start() {
        lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle else { return }
            lifecycle = .running(WorkerThread(name: "ag-voice") { [self] in run() })
        }
    }

    /// Stops the thread (the last subscriber left, or the channel was never used); returns the
    /// thread to join, if one ran. The processor is freed with the channel.
    @discardableResult
    func close() -> WorkerThread? {
        let thread = lifecycle.withLock { lifecycle -> WorkerThread? in
            defer { lifecycle = .closed }
            guard case .running(let thread) = lifecycle else { return nil }
            return thread
        }
        inbox.withLock { $0.closed = true }
        wake.signal()
        return thread
    }

    // MARK: - Capture thread

    /// Queues mono samples at the group's rate whose first was captured at `start` (monotonic ns).
    func submit(_ samples: UnsafeBufferPointer<Float>, start: Double, ready: UInt64, subscribers: [CaptureSubscriber]) {
        let lent = LentBuffer(samples)
        let nanosecondsPerFrame = nanosecondsPerFrame
        inbox.withLock { inbox in
            let samples = lent.readOnly
            let queued = inbox.samples.count
            let expected = inbox.start + Double(queued) * nanosecondsPerFrame
            if queued > 0, abs(start - expected) > Self.resyncMilliseconds * 1e6 {
                // Audio went missing (an xrun): the queued tail no longer joins on; restart the timeline.
                inbox.samples.removeAll()
            }
            if inbox.samples.isEmpty { inbox.start = start }
            let overflow = samples.count - inbox.samples.freeSpace
            if overflow > 0 {
                _ = inbox.samples.discard(overflow)
                inbox.start += Double(overflow) * nanosecondsPerFrame
            }
            _ = inbox.samples.write(samples)
            inbox.ready = ready
            // Replacing the array only retains it: the capture thread does not allocate here.
            inbox.subscribers = subscribers
        }
        wake.signal()
    }

    /// Forgets queued audio and the reference position (the capture device came back).
    func reset() {
        inbox.withLock { inbox in
            inbox.samples.removeAll()
            inbox.reset = true
        }
    }

    // MARK: - Processing thread

    private func run() {
        // Named after the setting, so `top -H` and the benchmark can tell processing threads apart.
        ag_voice_name_thread("voice-\(processing.label)")
        while true {
            wake.wait()
            let open = worker.withLock { worker in drain(&worker) }
            if !open { return }
        }
    }

    /// Processes every whole frame in the inbox; false once the channel is closed.
    private func drain(_ worker: inout Worker) -> Bool {
        let frameSize = worker.processor.frameSize
        while true {
            let taken = worker.frame.withUnsafeMutableBufferPointer { frame in
                let lent = LentBuffer(frame)
                return inbox.withLock {
                    inbox -> (closed: Bool, start: Double, ready: UInt64, subscribers: [CaptureSubscriber], reset: Bool)? in
                    if inbox.closed { return (true, 0, 0, [], false) }
                    guard inbox.samples.count >= frameSize else { return nil }
                    _ = inbox.samples.read(into: lent.buffer)
                    let start = inbox.start
                    inbox.start += Double(frameSize) * nanosecondsPerFrame
                    defer { inbox.reset = false }
                    return (false, start, inbox.ready, inbox.subscribers, inbox.reset)
                }
            }
            guard let taken else { return true }
            if taken.closed { return false }
            if taken.reset {
                worker.cursor = nil
                worker.farEndFrames = 0
                worker.activity.reset()
                worker.returnLoss.reset()
            }
            process(&worker, start: taken.start, ready: taken.ready, subscribers: taken.subscribers)
        }
    }

    private func process(_ worker: inout Worker, start: Double, ready: UInt64, subscribers: [CaptureSubscriber]) {
        let time = UInt64(max(0, start))
        var voiced = false
        var warmingUp = false
        var raw = LevelMeter()
        worker.frame.withUnsafeBufferPointer { raw.add($0) }
        do throws(VoiceProcessingError) {
            if processing.echoCancellation {
                fillReference(&worker, at: time)
                if worker.echoPathMoved {
                    // A restarted device plays with another delay; AEC3 finds a new path far
                    // faster from scratch (as on first use) than by re-adapting the old one.
                    try worker.processor.resetEchoCanceller()
                    worker.echoPathMoved = false
                    worker.farEndFrames = 0
                    worker.returnLoss.reset()
                }
                var far = LevelMeter()
                worker.reference.withUnsafeBufferPointer { far.add($0) }
                worker.returnLoss.reference(far.rmsDBFS)
                worker.sinceFarEnd = worker.sinceFarEnd == .max ? .max : worker.sinceFarEnd + 1
                if far.rmsDBFS > Self.farEndFloorDBFS {
                    // After a pause the suppressor needs a few frames to clamp down again.
                    if worker.sinceFarEnd > Self.echoTailFrames { worker.farEndRun = 0 }
                    worker.sinceFarEnd = 0
                    // While the canceller is still finding the echo path, what it lets through is
                    // echo, not the user: the detector does not count it.
                    warmingUp = worker.farEndFrames < Self.warmUpFrames || worker.farEndRun < Self.restartFrames
                    worker.farEndFrames += 1
                    worker.farEndRun += 1
                }
                let processor = worker.processor
                try worker.reference.withUnsafeBufferPointer { reference throws(VoiceProcessingError) in
                    try processor.reverse(reference)
                }
            }
            let processor = worker.processor
            voiced = try worker.frame.withUnsafeMutableBufferPointer { frame throws(VoiceProcessingError) in
                try processor.process(frame)
            }
        } catch {
            // Cannot happen with a frame of the processor's own size; the audio passes unprocessed.
            voiced = false
        }
        let sampleFormat = format.sampleFormat
        let nanosecondsPerFrame = nanosecondsPerFrame
        worker.frame.withUnsafeBufferPointer { frame in
            worker.encoded.withUnsafeMutableBytes { encoded in
                _ = SampleConversion.encode(frame, format: sampleFormat, into: encoded)
            }
        }
        worker.encoded.withUnsafeBufferPointer { bytes in
            for subscriber in subscribers {
                subscriber.append(bytes, start: start, nanosecondsPerFrame: nanosecondsPerFrame, ready: ready)
            }
        }
        guard processing.voiceDetection else { return }
        var meter = LevelMeter()
        worker.frame.withUnsafeBufferPointer { meter.add($0) }
        let echo = worker.sinceFarEnd < Self.echoTailFrames
        let nearEndLouder = echo && worker.returnLoss.nearEndLouder(rawDBFS: raw.rmsDBFS)
        let event = worker.activity.update(
            voiced: voiced && !warmingUp, levelDBFS: meter.rmsDBFS, rawDBFS: raw.rmsDBFS, start: time, echo: echo,
            nearEndLouder: nearEndLouder)
        if echo, !warmingUp, !worker.activity.speaking, !voiced {
            worker.returnLoss.learn(rawDBFS: raw.rmsDBFS, floorDBFS: Self.farEndFloorDBFS)
        }
        guard let event else { return }
        switch event {
        case .speech(let timestamp):
            for subscriber in subscribers { subscriber.deliverVoice(speech: true, timestamp: timestamp) }
        case .silence(let timestamp):
            for subscriber in subscribers { subscriber.deliverVoice(speech: false, timestamp: timestamp) }
        }
    }
}
