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
    let format: AudioFormat
    let stream: PlaybackStream
    let mixer: PlaybackMixer
    let synthesizer: SpeechSynthesizer
    /// The stream's clear count when the text was accepted: a clear after it drops the text.
    let clears: Int
    /// The feed of the text accepted before this one on the same stream, if it may still run.
    var after: OneShot<Outcome>?
    /// Set when the feed ends.
    let ended = OneShot<Outcome>()

    init(samples: [UInt8], format: AudioFormat, stream: PlaybackStream, mixer: PlaybackMixer, synthesizer: SpeechSynthesizer) {
        self.samples = samples
        self.format = format
        self.stream = stream
        self.mixer = mixer
        self.synthesizer = synthesizer
        clears = stream.clearCount
    }

    /// Queues the samples a slice at a time as the stream has room, then marks its input finished;
    /// stops at a clear of the stream, so a barge-in silences the rest of the text too.
    func run() async {
        if let after {
            do { _ = try await after.wait() } catch { return end(.cancelled) }
        }
        let slice = PlaybackStream.sliceFrames(format) * format.bytesPerFrame
        let mixFormat = mixer.mixFormatProvider
        stream.addLatencyProbe(position: stream.position, startNanoseconds: MonotonicClock.nowNanoseconds())
        do {
            var offset = 0
            while offset < samples.count {
                try await stream.waitForRoom()
                let upper = min(samples.count, offset + slice)
                let queued = samples.withUnsafeBytes { raw in
                    stream.enqueueNow(
                        UnsafeRawBufferPointer(rebasing: raw[offset..<upper]), format: format, mixFormat: mixFormat,
                        unlessClearedSince: clears)
                }
                guard queued else { return end(.cleared) }
                offset = upper
            }
            stream.finishInput()
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
