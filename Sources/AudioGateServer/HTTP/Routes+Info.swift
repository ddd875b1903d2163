import AudioGateDevices
import Hummingbird
import NIOPosix

extension AudioGateServer {
    func addInfoRoutes(to router: Router<AudioGateRequestContext>) {
        router.on(RouteTable.health) { _, _ in
            try JSONResponse.make(["status": "ok"])
        }
        router.on(RouteTable.info) { _, _ in
            try JSONResponse.make(info())
        }
        router.on(RouteTable.devices) { _, _ in
            // ALSA's device hints read its configuration and ask each plugin (pulse connects to
            // its server): never on an event loop.
            let devices = try await NIOThreadPool.singleton.runIfActive { DeviceList.all() }
            return try JSONResponse.make(DevicesResponse(devices: devices))
        }
        router.on(RouteTable.status) { _, _ -> Response in
            // The level is live audio: a reader keeps (or gets) the capture device running.
            engine.captureHub.demand.touch()
            return try JSONResponse.make(status())
        }
    }

    func info() -> InfoResponse {
        let quality = configuration.resamplerQuality
        return InfoResponse(
            version: AudioGateVersion.current,
            capture: .init(engine.capture.monitor.snapshot),
            playback: .init(engine.playback.monitor.snapshot),
            client: .init(
                rates: ClientFormats.captureRates, formats: ClientFormats.formats,
                channels: Array(ClientFormats.channels),
                chunkMs: .init(min: ClientFormats.chunkMilliseconds.lowerBound, max: ClientFormats.chunkMilliseconds.upperBound),
                resampler: quality.summary),
            limits: configuration.limits, wyoming: wyomingStatus, duckDb: configuration.duckDecibels,
            snapcast: snapcastInfo, sendspin: sendspinInfo)
    }

    func status() -> StatusResponse {
        let capture = engine.capture.monitor.snapshot
        let playback = engine.playback.monitor.snapshot
        let level = engine.captureHub.lastLevel
        return StatusResponse(
            capture: .init(
                state: capture.state.rawValue, device: capture.name, xruns: capture.xruns, reopens: capture.reopens,
                subscribers: engine.captureHub.subscriberCount, frames: capture.frames, lastError: capture.lastError,
                lostMs: engine.captureHub.lostMilliseconds, formats: engine.captureHub.formatStatus,
                clients: engine.captureHub.clientStatus, sendDelay: engine.captureHub.sendDelayStatus,
                encoders: engine.captureHub.encoders.status, encodedClients: engine.captureHub.encoders.listenerCount),
            playback: .init(
                state: playback.state.rawValue, device: playback.name, streams: engine.mixer.streamCount,
                queuedMs: engine.mixer.queuedMilliseconds, playedFrames: playback.frames,
                underruns: engine.mixer.underruns, xruns: playback.xruns, ranEmpty: playback.ranEmpty, reopens: playback.reopens,
                lastError: playback.lastError, volume: engine.mixer.volume.settings,
                latency: engine.mixer.latencySummary, clearToSilence: engine.mixer.clearToSilenceSummary,
                streamList: engine.mixer.streamStatus, ducking: engine.mixer.duckingStatus),
            level: .init(rmsDbfs: level.rms, peakDbfs: level.peak), wyoming: wyomingStatus,
            snapcast: snapcastStatus, sendspin: sendspinStatus)
    }
}
