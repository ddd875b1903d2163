import AudioGateCore
import Foundation
import Hummingbird

extension AudioGateServer {
    /// `POST /v1/say` and `GET /v1/voices`.
    func addSpeechRoutes(to router: Router<AudioGateRequestContext>) {
        let mixer = engine.mixer
        router.post("/v1/say") { request, _ in
            let parameters = try PlaybackParameters(request: request)
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: SpeechRequest.maximumBodyBytes)
            } catch {
                throw APIError(.tooLarge, "the body is larger than \(SpeechRequest.maximumBodyBytes) bytes")
            }
            let speech = try SpeechRequest(json: Data(buffer: body))
            return try await SpeechPlayback(mixer: mixer, synthesizer: .shared).run(speech, wait: parameters.wait)
        }
        router.get("/v1/voices") { _, _ in
            try JSONResponse.make(["voices": try SpeechSynthesizer.shared.voices()])
        }
    }
}
