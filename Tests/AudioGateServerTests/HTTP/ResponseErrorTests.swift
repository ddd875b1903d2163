import AudioGateCore
import CEspeak
@testable import AudioGateServer
import Testing

/// Each feature's own error reaches clients with the code and status they got before features had
/// their own types, and the routes' parameters are the parsers' keys.
@Suite("feature errors and route parameters")
struct ResponseErrorTests {
    @Test(
        "every feature error maps to its client code and status",
        arguments: [
            (CaptureError(.badParameter, "x") as any ResponseError, "bad_parameter", 400),
            (CaptureError(.tooManyClients, "x"), "too_many_requests", 429),
            (CaptureError(.encoderFailed, "x"), "internal_error", 500),
            (RecordingError(.noSpace, "x"), "insufficient_storage", 507),
            (RecordingError(.diskLimit, "x"), "insufficient_storage", 507),
            (RecordingError(.io, "x"), "internal_error", 500),
            (RecordingError(.badBody, "x"), "bad_body", 400),
            (RecordingError(.notFound, "x"), "not_found", 404),
            (RecordingError(.tooManyRecordings, "x"), "too_many_requests", 429),
            (RecordingError(.unavailable, "x"), "unavailable", 503),
            (SpeechError(.unknownVoice, "x"), "bad_body", 400),
            (SpeechError(.busy, "x"), "too_many_requests", 429),
            (SpeechError(.tooLarge, "x"), "too_large", 413),
            (SpeechError(.unavailable, "x"), "unavailable", 503),
            (CodecError(.tooManyDecoders, "x"), "too_many_decoders", 503),
            (CodecError(.unsupported, "x"), "unsupported_media_type", 415),
            (SendspinCommandError(.badBody, "x"), "bad_body", 400),
            (SendspinCommandError(.notFound, "x"), "not_found", 404),
            (SendspinCommandError(.unavailable, "x"), "unavailable", 503),
            (SendspinCommandError(.conflict, "x"), "conflict", 409),
        ] as [(any ResponseError, String, Int)])
    func mapped(error: any ResponseError, code: String, status: Int) {
        let answer = APIError(mapping: error)
        #expect(answer.code.rawValue == code)
        #expect(answer.status.code == status)
        #expect(answer.message == error.message)
    }

    @Test("an unknown voice says where the voices are listed, whoever finds it")
    func unknownVoice() {
        #expect(SpeechError.unknownVoice("no voice 'xx'").message == "no voice 'xx': GET /v1/voices lists the installed voices")
        #expect(throws: SpeechError.unknownVoice("espeak_SetVoiceByName(xx): not found")) {
            try espeakCheck(EE_NOT_FOUND, "espeak_SetVoiceByName(xx)", code: .unknownVoice)
        }
    }

    @Test("a route's parameters are its parser's keys")
    func parameters() {
        #expect(RouteTable.capture.parameters == Set(CaptureParameters.queryKeys))
        #expect(RouteTable.playback.parameters == Set(PlaybackParameters.queryKeys))
        #expect(RouteTable.playbackSocket.parameters == Set(PlaybackParameters.queryKeys).subtracting(["wait"]))
        #expect(RouteTable.say.parameters == Set(SpeechRequest.queryKeys))
    }

    @Test("a Content-Type is read as its lowercased media type without parameters")
    func contentType() {
        #expect(ContentType.mediaType(nil) == nil)
        #expect(ContentType.mediaType("Audio/MPEG; charset=x") == "audio/mpeg")
        #expect(ContentType.mediaType(" audio/ogg ;codecs=opus") == "audio/ogg")
        #expect(ContentType.mediaType("") == "")
        #expect(AudioContainer.from(contentType: "audio/FLAC; x=1") == .flac)
        #expect(AudioContainer.from(contentType: "audio/wav") == nil)
    }
}
