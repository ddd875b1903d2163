#ifndef AUDIOGATE_CSAMPLERATE_SHIM_H
#define AUDIOGATE_CSAMPLERATE_SHIM_H
#include <samplerate.h>
#endif
