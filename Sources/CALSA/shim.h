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

// Whether ALSA's configuration defines the PCM `name` (with its arguments): 1 yes, 0 no, <0 an error
// reading the configuration. The global configuration tree is touched here, in C, because Swift
// cannot reference the mutable global `snd_config` under strict concurrency.
static inline int audiogate_pcm_defined(const char *name) {
    int err = snd_config_update();
    if (err < 0) return err;
    snd_config_t *definition = NULL;
    if (snd_config_search_definition(snd_config, "pcm", name, &definition) < 0) return 0;
    snd_config_delete(definition);
    return 1;
}

#endif
