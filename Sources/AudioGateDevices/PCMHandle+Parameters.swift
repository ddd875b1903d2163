import AudioGateCore
import CALSA

extension PCMHandle {
    /// Sample formats in order of preference; the card's native formats only (no plug conversion).
    static let formatPreference: [(snd_pcm_format_t, SampleFormat)] = [
        (SND_PCM_FORMAT_S32_LE, .s32le),
        (SND_PCM_FORMAT_S24_LE, .s24le),
        (SND_PCM_FORMAT_S24_3LE, .s24le3),
        (SND_PCM_FORMAT_FLOAT_LE, .f32le),
        (SND_PCM_FORMAT_S16_LE, .s16le),
    ]

    static func configure(
        _ pcm: OpaquePointer, direction: PCMDirection, request: PCMRequest
    ) throws(ALSAError) -> NegotiatedFormat {
        guard let hw = audiogate_hw_params_new() else {
            throw ALSAError(code: .failed, call: "snd_pcm_hw_params_malloc", message: "out of memory")
        }
        defer { snd_pcm_hw_params_free(hw) }

        try alsaCheck("snd_pcm_hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try alsaCheck(
            "snd_pcm_hw_params_set_access",
            snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED))
        // The card's own rate is wanted: resampling happens in audiogate, with a known quality.
        _ = snd_pcm_hw_params_set_rate_resample(pcm, hw, 0)

        guard let (alsaFormat, sampleFormat) = formatPreference.first(where: {
            snd_pcm_hw_params_test_format(pcm, hw, $0.0) == 0
        }) else {
            throw ALSAError(
                code: .unsupportedConfiguration, call: "snd_pcm_hw_params_set_format",
                message: "the device offers none of S32_LE, S24_LE, S24_3LE, FLOAT_LE, S16_LE")
        }
        try alsaCheck("snd_pcm_hw_params_set_format", snd_pcm_hw_params_set_format(pcm, hw, alsaFormat))

        var channels = UInt32(request.preferredChannels)
        if snd_pcm_hw_params_test_channels(pcm, hw, channels) != 0 {
            for candidate in [UInt32(1), 2] where snd_pcm_hw_params_test_channels(pcm, hw, candidate) == 0 {
                channels = candidate
                break
            }
        }
        try alsaCheck(
            "snd_pcm_hw_params_set_channels_near", snd_pcm_hw_params_set_channels_near(pcm, hw, &channels))
        guard channels == 1 || channels == 2 else {
            throw ALSAError(
                code: .unsupportedConfiguration, call: "snd_pcm_hw_params_set_channels",
                message: "the device offers \(channels) channels; audiogate handles 1 or 2")
        }

        var rate = UInt32(request.preferredRate)
        var dir: Int32 = 0
        try alsaCheck("snd_pcm_hw_params_set_rate_near", snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir))

        var period = snd_pcm_uframes_t(max(16, Int(rate) * request.periodMilliseconds / 1000))
        try alsaCheck(
            "snd_pcm_hw_params_set_period_size_near",
            snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir))
        var buffer = snd_pcm_uframes_t(max(Int(period) * 2, Int(rate) * request.bufferMilliseconds / 1000))
        try alsaCheck(
            "snd_pcm_hw_params_set_buffer_size_near",
            snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer))
        try alsaCheck("snd_pcm_hw_params", snd_pcm_hw_params(pcm, hw))

        try alsaCheck("snd_pcm_hw_params_get_period_size", snd_pcm_hw_params_get_period_size(hw, &period, &dir))
        try alsaCheck("snd_pcm_hw_params_get_buffer_size", snd_pcm_hw_params_get_buffer_size(hw, &buffer))
        try alsaCheck("snd_pcm_hw_params_get_rate", snd_pcm_hw_params_get_rate(hw, &rate, &dir))
        try alsaCheck("snd_pcm_hw_params_get_channels", snd_pcm_hw_params_get_channels(hw, &channels))

        guard let sw = audiogate_sw_params_new() else {
            throw ALSAError(code: .failed, call: "snd_pcm_sw_params_malloc", message: "out of memory")
        }
        defer { snd_pcm_sw_params_free(sw) }
        try alsaCheck("snd_pcm_sw_params_current", snd_pcm_sw_params_current(pcm, sw))
        // Playback starts once one period is queued: low latency without an instant underrun.
        let threshold = direction == .playback ? period : 1
        try alsaCheck(
            "snd_pcm_sw_params_set_start_threshold", snd_pcm_sw_params_set_start_threshold(pcm, sw, threshold))
        try alsaCheck("snd_pcm_sw_params_set_avail_min", snd_pcm_sw_params_set_avail_min(pcm, sw, period))
        try alsaCheck("snd_pcm_sw_params", snd_pcm_sw_params(pcm, sw))
        try alsaCheck("snd_pcm_prepare", snd_pcm_prepare(pcm))

        return NegotiatedFormat(
            format: AudioFormat(rate: Int(rate), channels: Int(channels), sampleFormat: sampleFormat),
            periodFrames: Int(period),
            bufferFrames: Int(buffer))
    }
}
