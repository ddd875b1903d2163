import Foundation
import Hummingbird
import ServiceLifecycle

extension AudioGateServer {
    /// `POST/DELETE /v1/playback`, `GET/PUT /v1/volume` and a plain `GET /v1/playback`.
    func addPlaybackRoutes(to router: Router<AudioGateRequestContext>) {
        let mixer = engine.mixer
        router.on(RouteTable.playback) { request, _ in
            let parameters = try PlaybackParameters(request: request)
            // An upload waits for room in its stream and `wait=true` for the speaker: on shutdown
            // both end at once (503) instead of holding the server up for the queue's length.
            return try await cancelWhenGracefulShutdown {
                try await PlaybackUpload(mixer: mixer, parameters: parameters).run(request: request)
            }
        }
        router.on(RouteTable.flush) { request, _ in
            let query = request.uri.queryDictionary
            let streams: [PlaybackStream]
            if let name = query["stream"] {
                streams = mixer.existingStream(try PlaybackParameters.validatedStreamName(name)).map { [$0] } ?? []
            } else {
                streams = mixer.allStreams
            }
            var flushed = 0
            var played = 0
            for stream in streams {
                let result = stream.clear()
                flushed += result.flushedMilliseconds
                played += result.playedMilliseconds
            }
            return try JSONResponse.make(["flushed_ms": flushed, "played_ms": played])
        }
        router.on(RouteTable.volume) { _, _ in
            try JSONResponse.make(mixer.volume.settings)
        }
        router.on(RouteTable.setVolume) { request, context in
            let body = try await request.body.collect(upTo: 4096)
            let update: VolumeUpdate
            do {
                update = try JSONDecoder().decode(VolumeUpdate.self, from: Data(buffer: body))
            } catch {
                throw PlaybackError(.badBody, "expected {\"playback\": 0.0-1.0, \"muted\": true|false}")
            }
            var settings = mixer.volume.settings
            if let playback = update.playback {
                guard playback.isFinite, (0...1).contains(playback) else {
                    throw PlaybackError(.badBody, "'playback' must be between 0.0 and 1.0")
                }
                settings.playback = playback
            }
            if let muted = update.muted { settings.muted = muted }
            mixer.volume.apply(settings)
            return try JSONResponse.make(mixer.volume.settings)
        }
        // The WebSocket itself is served by `webSocketUpgrade`; a plain GET gets the same checks
        // and an empty 200, as documented.
        router.on(RouteTable.playbackSocket) { request, _ in
            _ = try PlaybackParameters(request: request)
            return Response(status: .ok)
        }
    }
}
