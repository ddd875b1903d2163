import AudioGateCore
import CWebRTCAudio

/// One WebRTC audio processing instance: owns the C handle and processes 10 ms mono frames.
///
/// Not thread-safe by itself: one processing thread owns it (the module requires reverse and
/// capture calls never to run at the same time).
final class VoiceProcessor {
    private let handle: OpaquePointer
    /// Sample rate of both streams.
    let rate: Int
    /// What runs.
    let processing: VoiceProcessing
    /// Frames per 10 ms frame.
    let frameSize: Int

    init(rate: Int, processing: VoiceProcessing) throws(VoiceProcessingError) {
        var pointer: OpaquePointer?
        let options = ag_voice_options(
            echo_cancellation: processing.echoCancellation ? 1 : 0,
            noise_suppression: processing.noiseSuppression ? 1 : 0,
            gain_control: processing.gainControl ? 1 : 0,
            voice_detection: processing.voiceDetection ? 1 : 0)
        try VoiceProcessingError.check(ag_voice_create(Int32(rate), options, &pointer), "ag_voice_create")
        guard let pointer else { throw VoiceProcessingError(result: -2, call: "ag_voice_create") }
        handle = pointer
        self.rate = rate
        self.processing = processing
        frameSize = Int(ag_voice_frame_size(pointer))
    }

    deinit { ag_voice_destroy(handle) }

    /// Feeds one frame of the echo reference (what the speaker plays).
    func reverse(_ frame: UnsafeBufferPointer<Float>) throws(VoiceProcessingError) {
        precondition(frame.count == frameSize)
        try VoiceProcessingError.check(ag_voice_reverse(handle, frame.baseAddress), "ag_voice_reverse")
    }

    /// Processes one captured frame in place; returns whether the detector heard voice.
    @discardableResult
    func process(_ frame: UnsafeMutableBufferPointer<Float>, delayMilliseconds: Int = 0) throws(VoiceProcessingError)
        -> Bool
    {
        precondition(frame.count == frameSize)
        var voice: Int32 = 0
        try VoiceProcessingError.check(
            ag_voice_process(handle, frame.baseAddress, Int32(delayMilliseconds), &voice), "ag_voice_process")
        return voice != 0
    }

    /// Starts the echo canceller afresh (the echo path moved); the other parts keep their state.
    func resetEchoCanceller() throws(VoiceProcessingError) {
        try VoiceProcessingError.check(ag_voice_reset_echo(handle), "ag_voice_reset_echo")
    }

    /// The echo delay the canceller estimates, in ms (nil while it does not know).
    var estimatedEchoDelayMilliseconds: Int? {
        let value = ag_voice_echo_delay_ms(handle)
        return value >= 0 ? Int(value) : nil
    }
}
