#ifndef AUDIOGATE_MALLOC_H
#define AUDIOGATE_MALLOC_H

// glibc's allocator controls (mallopt), which its Swift module does not import.
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

#endif
