// A C interface to WebRTC's audio processing module (AEC3 echo cancellation, noise suppression,
// automatic gain) and its GMM voice detector, on 10 ms frames of mono float audio.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_voice ag_voice;

/// Which parts of the processing run.
typedef struct ag_voice_options {
    int echo_cancellation;
    int noise_suppression;
    int gain_control;
    int voice_detection;
} ag_voice_options;

/// Creates a processor for mono audio at `rate` (8000, 16000, 32000 or 48000 Hz).
/// Returns 0 or a negative AudioProcessing error code; `*out` is set only on success.
int ag_voice_create(int rate, ag_voice_options options, ag_voice **out);

/// Frees a processor (NULL is ignored).
void ag_voice_destroy(ag_voice *voice);

/// Frames in one 10 ms frame at the processor's rate.
int ag_voice_frame_size(const ag_voice *voice);

/// Feeds one 10 ms frame of what the speaker plays (the echo reference).
int ag_voice_reverse(ag_voice *voice, const float *samples);

/// Processes one 10 ms frame of captured audio in place; `delay_ms` is the delay between the
/// reference and its echo as far as the caller knows it. `*voice_detected` is set when voice
/// detection runs (else 0).
int ag_voice_process(ag_voice *voice, float *samples, int delay_ms, int *voice_detected);

/// Starts the echo canceller afresh (the echo path moved: another device delay); the noise
/// suppressor and gain control keep their state. Returns 0 or an error code.
int ag_voice_reset_echo(ag_voice *voice);

/// The echo delay the canceller estimates, in ms (-1 while it does not know).
int ag_voice_echo_delay_ms(ag_voice *voice);

/// Names the calling thread (at most 15 bytes are kept), so processing threads show in `top -H`.
void ag_voice_name_thread(const char *name);

/// The name of an error code, for messages.
const char *ag_voice_error_name(int code);

#ifdef __cplusplus
}
#endif
