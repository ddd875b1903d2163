#ifndef AUDIOGATE_DOT_PRODUCT_H
#define AUDIOGATE_DOT_PRODUCT_H

/// The polyphase resampler's output loop and its dot products of float runs, in the widest vector unit the CPU has.
/// Swift compiles for the baseline instruction set (SSE2 on x86-64) and cannot mark one function
/// for AVX2 and FMA, so the wide version lives here behind a one-time CPU check.

typedef float audiogate_f32x8 __attribute__((vector_size(32), aligned(4)));
typedef float audiogate_f32x4 __attribute__((vector_size(16)));

/// The sum of the eight lanes, halving the vector each step.
#define AUDIOGATE_SUM_LANES(v)                                                                        \
    audiogate_f32x4 half = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7); \
    half += __builtin_shufflevector(half, half, 2, 3, 0, 1);                                           \
    return half[0] + half[1];

/// The body of both dot products: the sum of `x[i] * h[i]` for `i < count`, `count` a multiple of
/// 8, in two accumulators so each multiply-add does not wait on the one before it.
#define AUDIOGATE_DOT_BODY                                                                            \
    audiogate_f32x8 first = {0}, second = {0};                                                        \
    long i = 0;                                                                                       \
    for (; i + 16 <= count; i += 16) {                                                                \
        first = first + *(const audiogate_f32x8 *)(x + i) * *(const audiogate_f32x8 *)(h + i);       \
        second = second + *(const audiogate_f32x8 *)(x + i + 8) * *(const audiogate_f32x8 *)(h + i + 8); \
    }                                                                                                 \
    if (i < count) first = first + *(const audiogate_f32x8 *)(x + i) * *(const audiogate_f32x8 *)(h + i); \
    first += second;                                                                                  \
    AUDIOGATE_SUM_LANES(first)

/// The dot product in the baseline vector unit.
static inline __attribute__((always_inline)) float audiogate_dot_baseline(const float *x, const float *h, long count) {
    AUDIOGATE_DOT_BODY
}

/// Where a polyphase filter's next output is, and what it reads: `history` holds `channels` rows of
/// `stride` frames; the output at `frame` and `phase` is row `phase` of `coefficients` (`taps`
/// each) against the history from `frame - lead`. Outputs are made while `frame < end`.
typedef struct {
    const float *history;
    long stride;
    long channels;
    const float *coefficients;
    long taps;
    long lead;
    long phases;
    long frame_step;
    long phase_step;
    long end;
    long frame;
    long phase;
} audiogate_polyphase;

/// The output loop, for one dot product function: writes up to `capacity` interleaved frames.
#define AUDIOGATE_POLYPHASE_LOOP(dot)                                                                 \
    const float *history = state->history, *coefficients = state->coefficients;                      \
    const long stride = state->stride, channels = state->channels, taps = state->taps;                \
    const long phases = state->phases, frame_step = state->frame_step, phase_step = state->phase_step; \
    const long end = state->end;                                                                      \
    long frame = state->frame, phase = state->phase, made = 0;                                        \
    const float *start = history + (frame - state->lead);                                             \
    while (made < capacity && frame < end) {                                                          \
        const float *row = coefficients + phase * taps;                                               \
        if (channels == 1) {                                                                          \
            output[made] = dot(start, row, taps);                                                     \
        } else {                                                                                      \
            for (long channel = 0; channel < channels; channel++) {                                   \
                output[made * channels + channel] = dot(start + channel * stride, row, taps);         \
            }                                                                                         \
        }                                                                                             \
        made++;                                                                                       \
        frame += frame_step;                                                                          \
        start += frame_step;                                                                          \
        phase += phase_step;                                                                          \
        if (phase >= phases) {                                                                        \
            phase -= phases;                                                                          \
            frame++;                                                                                  \
            start++;                                                                                  \
        }                                                                                             \
    }                                                                                                 \
    state->frame = frame;                                                                             \
    state->phase = phase;                                                                             \
    return made;

/// Makes the outputs the held input completes, in the baseline vector unit.
static inline long audiogate_polyphase_baseline(audiogate_polyphase *state, float *output, long capacity) {
    AUDIOGATE_POLYPHASE_LOOP(audiogate_dot_baseline)
}

#if defined(__x86_64__)
#include <cpuid.h>

/// The same sum with 256-bit fused multiply-adds (two per 16 taps instead of eight instructions).
__attribute__((target("avx2,fma"), always_inline))
static inline float audiogate_dot_avx2(const float *x, const float *h, long count) {
    AUDIOGATE_DOT_BODY
}

/// Makes the outputs the held input completes, with AVX2 and FMA.
__attribute__((target("avx2,fma")))
static inline long audiogate_polyphase_avx2(audiogate_polyphase *state, float *output, long capacity) {
    AUDIOGATE_POLYPHASE_LOOP(audiogate_dot_avx2)
}

/// Whether the CPU has AVX2 and FMA and the kernel saves the 256-bit registers across switches.
static inline int audiogate_cpu_has_avx2_fma(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!(fma && osxsave && avx)) return 0;
    unsigned int low, high;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    if ((low & 6) != 6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 5) & 1;
}
#else
static inline long audiogate_polyphase_avx2(audiogate_polyphase *state, float *output, long capacity) {
    return audiogate_polyphase_baseline(state, output, capacity);
}

static inline int audiogate_cpu_has_avx2_fma(void) { return 0; }
#endif

#endif
