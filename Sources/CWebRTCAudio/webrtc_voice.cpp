#include "CWebRTCAudio.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <pthread.h>
#include <string.h>

#include "api/audio/audio_processing.h"
#include "common_audio/vad/include/webrtc_vad.h"

using webrtc::AudioProcessing;

struct ag_voice {
    webrtc::scoped_refptr<AudioProcessing> apm;
    webrtc::StreamConfig config;
    ag_voice_options options;
    VadInst *vad = nullptr;

    ~ag_voice() {
        if (vad != nullptr) WebRtcVad_Free(vad);
    }
};

extern "C" int ag_voice_create(int rate, ag_voice_options options, ag_voice **out) {
    if (out == nullptr) return AudioProcessing::kNullPointerError;
    if (rate != 8000 && rate != 16000 && rate != 32000 && rate != 48000) return AudioProcessing::kBadSampleRateError;
    AudioProcessing::Config config;
    // Rumble and DC would otherwise take part of the canceller's and the detector's attention.
    config.high_pass_filter.enabled = true;
    // AEC3 estimates the echo path's delay itself and keeps the user's voice in double talk far
    // better than the older canceller (measured on the echo room: docs/benchmarks.md).
    config.echo_canceller.enabled = options.echo_cancellation != 0;
    config.echo_canceller.mobile_mode = false;
    config.noise_suppression.enabled = options.noise_suppression != 0;
    config.noise_suppression.level = AudioProcessing::Config::NoiseSuppression::kHigh;
    if (options.gain_control) {
        config.gain_controller1.enabled = true;
        config.gain_controller1.mode = AudioProcessing::Config::GainController1::kAdaptiveDigital;
        config.gain_controller1.target_level_dbfs = 3;
        config.gain_controller1.compression_gain_db = 9;
        config.gain_controller1.enable_limiter = true;
        // The analog controller drives a microphone volume we do not control.
        config.gain_controller1.analog_gain_controller.enabled = false;
    }
    auto apm = webrtc::AudioProcessingBuilder().SetConfig(config).Create();
    if (!apm) return AudioProcessing::kCreationFailedError;
    webrtc::ProcessingConfig processing = {{
        webrtc::StreamConfig(rate, 1), webrtc::StreamConfig(rate, 1),
        webrtc::StreamConfig(rate, 1), webrtc::StreamConfig(rate, 1),
    }};
    int result = apm->Initialize(processing);
    if (result != AudioProcessing::kNoError) return result;
    ag_voice *voice = new (std::nothrow) ag_voice{std::move(apm), webrtc::StreamConfig(rate, 1), options};
    if (voice == nullptr) return AudioProcessing::kCreationFailedError;
    if (options.voice_detection) {
        // The GMM detector the older library's voice detection ran, at the same aggressiveness
        // (its "low likelihood" setting is mode 2), on the processed audio as before.
        voice->vad = WebRtcVad_Create();
        if (voice->vad == nullptr || WebRtcVad_Init(voice->vad) != 0 || WebRtcVad_set_mode(voice->vad, 2) != 0) {
            delete voice;
            return AudioProcessing::kCreationFailedError;
        }
    }
    *out = voice;
    return AudioProcessing::kNoError;
}

extern "C" void ag_voice_destroy(ag_voice *voice) { delete voice; }

extern "C" int ag_voice_frame_size(const ag_voice *voice) { return static_cast<int>(voice->config.num_frames()); }

extern "C" int ag_voice_reverse(ag_voice *voice, const float *samples) {
    if (voice == nullptr || samples == nullptr) return AudioProcessing::kNullPointerError;
    const float *source[1] = {samples};
    // The reverse output is not changed by any enabled component; nobody reads it.
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
    if (code == AudioProcessing::kBadStreamParameterWarning) code = AudioProcessing::kNoError;
    int detected = 0;
    if (code == AudioProcessing::kNoError && voice->vad != nullptr) {
        const size_t count = voice->config.num_frames();
        int16_t pcm[480];
        for (size_t i = 0; i < count; i++) {
            pcm[i] = static_cast<int16_t>(std::lrint(std::clamp(samples[i], -1.0f, 1.0f) * 32767.0f));
        }
        detected = WebRtcVad_Process(voice->vad, voice->config.sample_rate_hz(), pcm, count) == 1 ? 1 : 0;
    }
    if (voice_detected != nullptr) *voice_detected = detected;
    return code;
}

extern "C" int ag_voice_reset_echo(ag_voice *voice) {
    if (voice == nullptr) return AudioProcessing::kNullPointerError;
    if (!voice->options.echo_cancellation) return AudioProcessing::kNoError;
    // Applying a configuration whose canceller setting changed creates a new canceller and leaves
    // the noise suppressor, gain control and filters as they are.
    auto config = voice->apm->GetConfig();
    config.echo_canceller.enabled = false;
    voice->apm->ApplyConfig(config);
    config.echo_canceller.enabled = true;
    voice->apm->ApplyConfig(config);
    return AudioProcessing::kNoError;
}

extern "C" int ag_voice_echo_delay_ms(ag_voice *voice) {
    if (voice == nullptr || !voice->options.echo_cancellation) return -1;
    auto delay = voice->apm->GetStatistics().delay_ms;
    return delay ? *delay : -1;
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
