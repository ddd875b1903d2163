import AudioGateCore
import Foundation

/// Synthesized speech on its way into a playback stream: queued a slice at a time as the stream has
/// room, after `POST /v1/say` may already have answered. Texts for one stream are queued one after
/// another, never interleaved.
///
/// It owns a pending slot of the synthesizer and a use of the stream, and gives both back when it
/// ends, whether all was queued, the stream was cleared, or the server is shutting down.
struct SpeechFeed: Sendable {
    /// How the feed ended.
    enum Outcome: Sendable {
        /// Every sample was queued.
        case queued
        /// The stream was cleared (barge-in): the rest was dropped.
        case cleared
        /// It was cancelled (server shutdown) before all was queued.
        case cancelled
    }

    let samples: [UInt8]
    let stream: PlaybackStream
    let mixer: PlaybackMixer
    let synthesizer: SpeechSynthesizer
    /// The way into the stream; it ends at a clear after the text was accepted, which drops the text.
    let ingest: PlaybackIngest
    /// The feed of the text accepted before this one on the same stream, if it may still run.
    var after: OneShot<Outcome>?
    /// Set when the feed ends.
    let ended = OneShot<Outcome>()

    init(samples: [UInt8], format: AudioFormat, stream: PlaybackStream, mixer: PlaybackMixer, synthesizer: SpeechSynthesizer) {
        self.samples = samples
        self.stream = stream
        self.mixer = mixer
        self.synthesizer = synthesizer
        ingest = PlaybackIngest(stream: stream, format: format, mixFormat: mixer.mixFormatProvider, endsAtClear: true)
    }

    /// Queues the samples as the stream has room, then finishes its input; stops at a clear of the
    /// stream, so a barge-in silences the rest of the text too.
    func run() async {
        if let after {
            do { _ = try await after.wait() } catch { return end(.cancelled) }
        }
        ingest.probeLatency(startNanoseconds: MonotonicClock.nowNanoseconds())
        do {
            guard try await ingest.write(samples) else { return end(.cleared) }
            ingest.finish()
            end(.queued)
        } catch {
            end(.cancelled)
        }
    }

    /// Ends the feed without queuing anything (the service had stopped).
    func abandon() { end(.cancelled) }

    private func end(_ outcome: Outcome) {
        mixer.release(stream)
        synthesizer.release()
        ended.fulfill(outcome)
    }
}
