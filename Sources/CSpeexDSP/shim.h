#ifndef AUDIOGATE_CSPEEXDSP_SHIM_H
#define AUDIOGATE_CSPEEXDSP_SHIM_H
#include <speex/speex_resampler.h>
#endif
