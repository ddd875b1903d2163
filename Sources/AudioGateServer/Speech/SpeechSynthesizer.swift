import AudioGateCore
import CEspeak
import Foundation
import Synchronization

/// espeak-ng, the system voice: text to 22.05 kHz mono s16 speech.
///
/// espeak-ng keeps global, non-thread-safe state, so there is one synthesizer per process and
/// every call into the library holds `engine`; synthesis runs on a thread of its own, never on
/// the event loops or the cooperative pool.
public final class SpeechSynthesizer: Sendable {
    /// The process's synthesizer.
    public static let shared = SpeechSynthesizer()

    /// Most requests waiting for or running synthesis; more get 429.
    public static let maximumPending = 8

    private struct Engine {
        var rate: Int?
        var voices: [SpeechVoice] = []
    }

    private let engine = Mutex(Engine())
    private let pending = Atomic<Int>(0)

    private init() {}

    /// The sample format of speech: espeak-ng's rate, mono s16le.
    public func format() throws(SpeechError) -> AudioFormat {
        let rate = try engine.withLock { engine throws(SpeechError) in try Self.start(&engine) }
        return AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le)
    }

    /// The installed voices.
    public func voices() throws(SpeechError) -> [SpeechVoice] {
        try engine.withLock { engine throws(SpeechError) in
            _ = try Self.start(&engine)
            return engine.voices
        }
    }

    /// Whether a voice named `name` is installed.
    func hasVoice(_ name: String) throws(SpeechError) -> Bool {
        let lowered = name.lowercased()
        return try voices().contains { $0.name == lowered || $0.languages.contains(lowered) }
    }

    /// Takes one of the pending slots; false when all are taken.
    func reserve() -> Bool {
        let (taken, _) = pending.wrappingAdd(1, ordering: .relaxed)
        if taken > Self.maximumPending {
            pending.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives a pending slot back.
    func release() { pending.wrappingSubtract(1, ordering: .relaxed) }

    /// Speaks `text` into `output` on a new thread; returns at once.
    func synthesize(text: String, voice: String, wordsPerMinute: Int, into output: SpeechOutput) {
        let thread = Thread { [self] in
            Thread.current.name = "ag-speech"
            do throws(SpeechError) {
                try engine.withLock { engine throws(SpeechError) in
                    _ = try Self.start(&engine)
                    try espeakCheck(espeak_SetVoiceByName(voice), "espeak_SetVoiceByName(\(voice))", code: .unknownVoice)
                    try espeakCheck(espeak_SetParameter(espeakRATE, Int32(wordsPerMinute), 0), "espeak_SetParameter(rate)")
                    let context = Unmanaged.passRetained(output)
                    defer { context.release() }
                    let bytes = Array(text.utf8) + [0]
                    let status = bytes.withUnsafeBytes { raw in
                        espeak_Synth(
                            raw.baseAddress, raw.count, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil,
                            context.toOpaque())
                    }
                    try espeakCheck(status, "espeak_Synth")
                }
                output.finish()
            } catch {
                output.finish(error: error)
            }
        }
        thread.start()
    }

    /// Initializes espeak-ng once (synchronous output to a callback) and reads its voice list.
    private static func start(_ engine: inout Engine) throws(SpeechError) -> Int {
        if let rate = engine.rate { return rate }
        let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, nil, 0)
        guard rate > 0 else {
            throw SpeechError(.unavailable, "espeak_Initialize: failed (is espeak-ng-data installed?)")
        }
        espeak_SetSynthCallback { samples, count, events in
            guard let user = events?.pointee.user_data else { return 0 }
            let output = Unmanaged<SpeechOutput>.fromOpaque(user).takeUnretainedValue()
            if let samples, count > 0 { output.append(UnsafeBufferPointer(start: samples, count: Int(count))) }
            // Non-zero asks espeak-ng to stop this synthesis.
            return output.isCancelled ? 1 : 0
        }
        engine.voices = listVoices()
        engine.rate = Int(rate)
        return Int(rate)
    }

    private static func listVoices() -> [SpeechVoice] {
        guard let list = espeak_ListVoices(nil) else { return [] }
        var result: [SpeechVoice] = []
        var index = 0
        while let voice = list[index] {
            index += 1
            let display = voice.pointee.name.map { String(cString: $0) } ?? ""
            let identifier = voice.pointee.identifier.map { String(cString: $0) } ?? ""
            // `languages` is (priority byte, NUL-terminated name) pairs, ended by a zero priority.
            var languages: [String] = []
            if var cursor = voice.pointee.languages.map({ UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }) {
                while cursor.pointee != 0 {
                    cursor += 1
                    let language = String(cString: cursor)
                    languages.append(language)
                    cursor += language.utf8.count + 1
                }
            }
            let name = identifier.split(separator: "/").last.map { String($0).lowercased() } ?? identifier
            let gender = voice.pointee.gender == 1 ? "male" : voice.pointee.gender == 2 ? "female" : "unknown"
            result.append(SpeechVoice(name: name, displayName: display, languages: languages, gender: gender))
        }
        return result.sorted { $0.name < $1.name }
    }
}
