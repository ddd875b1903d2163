#ifndef AUDIOGATE_PREFETCH_H
#define AUDIOGATE_PREFETCH_H

/// Asks the CPU to start loading the cache lines of `length` bytes at `address` for reading,
/// without waiting for them. Swift has no spelling for the prefetch instruction.
static inline void audiogate_prefetch(const void *address, unsigned long length) {
    const char *line = (const char *)address;
    for (unsigned long offset = 0; offset < length; offset += 64) {
        __builtin_prefetch(line + offset, 0, 3);
    }
}

#endif
