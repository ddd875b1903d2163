#ifndef AUDIOGATE_CFFMPEG_SHIM_H
#define AUDIOGATE_CFFMPEG_SHIM_H

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>

// FFmpeg's error codes are macros built from FFERRTAG/AVERROR, which Swift cannot import.
static inline int audiogate_averror_eof(void) { return AVERROR_EOF; }
static inline int audiogate_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int audiogate_averror_exit(void) { return AVERROR_EXIT; }
static inline int audiogate_averror_invalid_data(void) { return AVERROR_INVALIDDATA; }

// AV_NOPTS_VALUE is a cast macro Swift does not import.
static inline int64_t audiogate_av_nopts_value(void) { return AV_NOPTS_VALUE; }

// Keeps libav's stderr logging quiet; failures reach callers as return codes.
static inline void audiogate_av_quiet(void) { av_log_set_level(AV_LOG_QUIET); }

#endif
