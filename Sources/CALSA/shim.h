#ifndef AUDIOGATE_CALSA_SHIM_H
#define AUDIOGATE_CALSA_SHIM_H

#include <alsa/asoundlib.h>

// ALSA's *_alloca helpers are macros Swift cannot import; these heap versions
// are freed by the matching *_free call.
static inline snd_pcm_hw_params_t *audiogate_hw_params_new(void) {
    snd_pcm_hw_params_t *p = NULL;
    return snd_pcm_hw_params_malloc(&p) < 0 ? NULL : p;
}

static inline snd_pcm_sw_params_t *audiogate_sw_params_new(void) {
    snd_pcm_sw_params_t *p = NULL;
    return snd_pcm_sw_params_malloc(&p) < 0 ? NULL : p;
}

// Silences alsa-lib's default stderr error printer; errors reach callers as return codes.
static void audiogate_alsa_silent_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void audiogate_alsa_quiet(void) {
    snd_lib_error_set_handler(audiogate_alsa_silent_handler);
}

#endif
