#include "CWebRTCAudio.h"

#include <memory>
#include <new>
#include <pthread.h>
#include <string.h>

#include <webrtc/modules/audio_processing/include/audio_processing.h>

using webrtc::AudioProcessing;

#ifndef AG_VOICE_DELAY_AGNOSTIC
#define AG_VOICE_DELAY_AGNOSTIC false
#endif

struct ag_voice {
    std::unique_ptr<AudioProcessing> apm;
    webrtc::StreamConfig config;
    ag_voice_options options;
};

extern "C" int ag_voice_create(int rate, ag_voice_options options, ag_voice **out) {
    if (out == nullptr) return AudioProcessing::kNullPointerError;
    if (rate != 8000 && rate != 16000 && rate != 32000 && rate != 48000) return AudioProcessing::kBadSampleRateError;
    webrtc::Config config;
    // The reference arrives already aligned to the capture by device timestamps, so what remains is
    // the room's acoustic delay: the extended filter (128 ms) covers it from the first frame, where
    // delay-agnostic mode would first spend a second or more estimating it.
    config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
    config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(AG_VOICE_DELAY_AGNOSTIC));
    // The experimental AGC drives an analog microphone volume we do not control.
    config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
    std::unique_ptr<AudioProcessing> apm(AudioProcessing::Create(config));
    if (!apm) return AudioProcessing::kCreationFailedError;
    int result = AudioProcessing::kNoError;
    auto check = [&result](int code) {
        if (result == AudioProcessing::kNoError && code != AudioProcessing::kNoError) result = code;
    };
    webrtc::ProcessingConfig processing = {{
        webrtc::StreamConfig(rate, 1), webrtc::StreamConfig(rate, 1),
        webrtc::StreamConfig(rate, 1), webrtc::StreamConfig(rate, 1),
    }};
    check(apm->Initialize(processing));
    // Rumble and DC would otherwise take part of the canceller's and the detector's attention.
    check(apm->high_pass_filter()->Enable(true));
    if (options.echo_cancellation) {
        check(apm->echo_cancellation()->enable_drift_compensation(false));
        // Moderate suppression keeps more of the user's voice in double talk; the linear filter
        // plus moderate suppression still removes far more echo than a speech model notices.
        check(apm->echo_cancellation()->set_suppression_level(webrtc::EchoCancellation::kModerateSuppression));
        check(apm->echo_cancellation()->enable_delay_logging(true));
        check(apm->echo_cancellation()->Enable(true));
    }
    if (options.noise_suppression) {
        check(apm->noise_suppression()->set_level(webrtc::NoiseSuppression::kHigh));
        check(apm->noise_suppression()->Enable(true));
    }
    if (options.gain_control) {
        check(apm->gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital));
        check(apm->gain_control()->set_target_level_dbfs(3));
        check(apm->gain_control()->set_compression_gain_db(9));
        check(apm->gain_control()->enable_limiter(true));
        check(apm->gain_control()->Enable(true));
    }
    if (options.voice_detection) {
        check(apm->voice_detection()->set_likelihood(webrtc::VoiceDetection::kLowLikelihood));
        check(apm->voice_detection()->set_frame_size_ms(10));
        check(apm->voice_detection()->Enable(true));
    }
    if (result != AudioProcessing::kNoError) return result;
    ag_voice *voice = new (std::nothrow) ag_voice{std::move(apm), webrtc::StreamConfig(rate, 1), options};
    if (voice == nullptr) return AudioProcessing::kCreationFailedError;
    *out = voice;
    return AudioProcessing::kNoError;
}

extern "C" void ag_voice_destroy(ag_voice *voice) { delete voice; }

extern "C" int ag_voice_frame_size(const ag_voice *voice) { return static_cast<int>(voice->config.num_frames()); }

extern "C" int ag_voice_reverse(ag_voice *voice, const float *samples) {
    if (voice == nullptr || samples == nullptr) return AudioProcessing::kNullPointerError;
    const float *source[1] = {samples};
    // The reverse output is only changed by intelligibility enhancement (off); nobody reads it.
    float scratch[480];
    float *destination[1] = {scratch};
    return voice->apm->ProcessReverseStream(source, voice->config, voice->config, destination);
}

extern "C" int ag_voice_process(ag_voice *voice, float *samples, int delay_ms, int *voice_detected) {
    if (voice == nullptr || samples == nullptr) return AudioProcessing::kNullPointerError;
    if (voice->options.echo_cancellation) {
        int code = voice->apm->set_stream_delay_ms(delay_ms);
        if (code != AudioProcessing::kNoError && code != AudioProcessing::kBadStreamParameterWarning) return code;
    }
    float *channels[1] = {samples};
    int code = voice->apm->ProcessStream(channels, voice->config, voice->config, channels);
    if (voice_detected != nullptr) {
        *voice_detected = voice->options.voice_detection && voice->apm->voice_detection()->stream_has_voice() ? 1 : 0;
    }
    return code == AudioProcessing::kBadStreamParameterWarning ? AudioProcessing::kNoError : code;
}

extern "C" int ag_voice_echo_delay_ms(ag_voice *voice) {
    if (voice == nullptr || !voice->options.echo_cancellation) return -1;
    int median = -1, deviation = 0;
    float poor = 0;
    if (voice->apm->echo_cancellation()->GetDelayMetrics(&median, &deviation, &poor) != AudioProcessing::kNoError) {
        return -1;
    }
    return median;
}

extern "C" void ag_voice_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, sizeof shortened - 1);
    shortened[sizeof shortened - 1] = '\0';
    pthread_setname_np(pthread_self(), shortened);
}

extern "C" const char *ag_voice_error_name(int code) {
    switch (code) {
    case AudioProcessing::kNoError: return "no error";
    case AudioProcessing::kUnspecifiedError: return "unspecified error";
    case AudioProcessing::kCreationFailedError: return "creation failed";
    case AudioProcessing::kUnsupportedComponentError: return "unsupported component";
    case AudioProcessing::kUnsupportedFunctionError: return "unsupported function";
    case AudioProcessing::kNullPointerError: return "null pointer";
    case AudioProcessing::kBadParameterError: return "bad parameter";
    case AudioProcessing::kBadSampleRateError: return "bad sample rate";
    case AudioProcessing::kBadDataLengthError: return "bad data length";
    case AudioProcessing::kBadNumberChannelsError: return "bad number of channels";
    case AudioProcessing::kFileError: return "file error";
    case AudioProcessing::kStreamParameterNotSetError: return "stream parameter not set";
    case AudioProcessing::kNotEnabledError: return "not enabled";
    case AudioProcessing::kBadStreamParameterWarning: return "bad stream parameter";
    default: return "unknown error";
    }
}
