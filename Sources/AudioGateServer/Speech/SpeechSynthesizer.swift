import AudioGateCore
import CEspeak
import Foundation
import Synchronization

/// espeak-ng, the system voice: text to 22.05 kHz mono s16 speech.
///
/// espeak-ng keeps global, non-thread-safe state, so there is one synthesizer per process and every
/// call into the library runs on a speech thread holding `library`. What requests need to validate
/// (the rate and the voice list) is read once on such a thread and kept, so no event loop ever
/// waits for the library.
public final class SpeechSynthesizer: Sendable {
    /// The process's synthesizer.
    public static let shared = SpeechSynthesizer()

    /// Most requests synthesizing or feeding speech at once; more get 429.
    public static let maximumPending = 8

    /// What espeak-ng reported when it started.
    public struct Engine: Sendable {
        /// Its output format: espeak-ng's rate, mono s16le.
        public var format: AudioFormat
        /// The installed voices, sorted by name.
        public var voices: [SpeechVoice]

        /// Whether a voice named `name` (or speaking language `name`) is installed.
        func hasVoice(_ name: String) -> Bool {
            let lowered = name.lowercased()
            return voices.contains { $0.name == lowered || $0.languages.contains(lowered) }
        }
    }

    private let started = Mutex<OneShot<Result<Engine, SpeechError>>?>(nil)
    /// Held by the speech thread for every call into espeak-ng; never taken on an event loop.
    private let library = Mutex(())
    private let pending = Atomic<Int>(0)

    private init() {}

    /// The rate and voices, starting espeak-ng on a speech thread the first time.
    public func engine() async throws(SpeechError) -> Engine {
        let (signal, starts) = started.withLock { started in
            if let signal = started { return (signal, false) }
            let signal = OneShot<Result<Engine, SpeechError>>()
            started = signal
            return (signal, true)
        }
        if starts {
            let thread = WorkerThread(name: "ag-speech") { [self] in
                signal.fulfill(library.withLock { _ in Self.start() })
            }
            await thread.join()
        }
        return try await signal.waitIgnoringCancellation().get()
    }

    /// Takes one of the pending slots; false when all are taken.
    func reserve() -> Bool {
        let (_, taken) = pending.wrappingAdd(1, ordering: .relaxed)
        if taken > Self.maximumPending {
            pending.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives a pending slot back.
    func release() { pending.wrappingSubtract(1, ordering: .relaxed) }

    /// Speaks `text` on a speech thread and returns its s16le samples at the engine's rate, at most
    /// `maximumSeconds` of them (`truncated` says synthesis was stopped there).
    ///
    /// espeak-ng speaks far faster than real time (a 4000-character text in well under a second),
    /// so the whole text is synthesized before it is played. Cancelling the calling task stops
    /// synthesis at espeak-ng's next callback and throws `CancellationError`.
    func synthesize(
        text: String, voice: String, wordsPerMinute: Int, maximumSeconds: Int
    ) async throws -> (bytes: [UInt8], truncated: Bool) {
        let format = try await engine().format
        let output = SpeechOutput(maximumBytes: maximumSeconds * format.rate * format.bytesPerFrame)
        let thread = WorkerThread(name: "ag-speech") { [self] in
            library.withLock { _ in
                // A request that went away while an earlier text held the library starts nothing.
                guard !output.isCancelled else { return }
                do throws(SpeechError) {
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
                } catch {
                    output.fail(error)
                }
            }
        }
        await withTaskCancellationHandler {
            await thread.join()
        } onCancel: {
            output.cancel()
        }
        try Task.checkCancellation()
        return try output.result()
    }

    /// Initializes espeak-ng (synchronous output to a callback) and reads its voice list.
    private static func start() -> Result<Engine, SpeechError> {
        let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, nil, 0)
        guard rate > 0 else {
            return .failure(SpeechError(.unavailable, "espeak_Initialize: failed (is espeak-ng-data installed?)"))
        }
        espeak_SetSynthCallback { samples, count, events in
            guard let user = events?.pointee.user_data else { return 0 }
            let output = Unmanaged<SpeechOutput>.fromOpaque(user).takeUnretainedValue()
            if let samples, count > 0 { output.append(UnsafeBufferPointer(start: samples, count: Int(count))) }
            // Non-zero asks espeak-ng to stop this synthesis.
            return output.isCancelled || output.isFull ? 1 : 0
        }
        let format = AudioFormat(rate: Int(rate), channels: 1, sampleFormat: .s16le)
        return .success(Engine(format: format, voices: listVoices()))
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
