import AudioGateCore
import Foundation
import Hummingbird

extension AudioGateServer {
    /// `POST /v1/say` and `GET /v1/voices`.
    func addSpeechRoutes(to router: Router<AudioGateRequestContext>) {
        let playback = SpeechPlayback(
            mixer: engine.mixer, synthesizer: .shared, service: speech, maximumSeconds: configuration.limits.maxSaySeconds)
        router.on(RouteTable.say) { request, _ in
            let query = request.uri.queryDictionary
            let parameters = try PlaybackParameters(query: query)
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: SpeechRequest.maximumBodyBytes)
            } catch {
                throw SpeechError(.tooLarge, "the body is larger than \(SpeechRequest.maximumBodyBytes) bytes")
            }
            let speech = try SpeechRequest(json: Data(buffer: body), queryStream: query["stream"].map { _ in parameters.stream })
            return try await playback.run(speech, wait: parameters.wait)
        }
        router.on(RouteTable.voices) { _, _ in
            try JSONResponse.make(["voices": try await SpeechSynthesizer.shared.engine().voices])
        }
    }
}
