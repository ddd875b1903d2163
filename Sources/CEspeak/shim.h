#ifndef AUDIOGATE_CESPEAK_SHIM_H
#define AUDIOGATE_CESPEAK_SHIM_H

#include <espeak-ng/speak_lib.h>

#endif
