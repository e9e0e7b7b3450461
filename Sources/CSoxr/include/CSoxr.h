#ifndef SLIMPLAY_CSOXR_H
#define SLIMPLAY_CSOXR_H

#include <stddef.h>
#include <stdint.h>

/// libsoxr, loaded with dlopen only when resampling is asked for (`-R`): a player without it never
/// maps the library (nor the OpenMP runtime it brings).

/// squeezelite's recipe letters, as libsoxr's constants.
enum {
  SLIMPLAY_SOXR_QQ = 0,
  SLIMPLAY_SOXR_LQ = 1,
  SLIMPLAY_SOXR_MQ = 2,
  SLIMPLAY_SOXR_HQ = 4,
  SLIMPLAY_SOXR_VHQ = 6,
  SLIMPLAY_SOXR_LINEAR_PHASE = 0x00,
  SLIMPLAY_SOXR_INTERMEDIATE_PHASE = 0x10,
  SLIMPLAY_SOXR_MINIMUM_PHASE = 0x30,
  SLIMPLAY_SOXR_STEEP_FILTER = 0x40,
};

/// What overrides the recipe's own values; a field at or below its "unset" value keeps the recipe's
/// (precision, passband and stopband 0, phase response -1).
typedef struct {
  unsigned long recipe;
  unsigned long flags;
  double precision;
  double passband_end;
  double stopband_begin;
  double phase_response;
  /// Gain applied while resampling (squeezelite's attenuation: 10^(-dB/20)).
  double scale;
} slimplay_soxr_spec;

/// Loads the library once; NULL when loaded, else why not (dlerror's text).
const char *slimplay_soxr_load(void);

/// A stereo interleaved int32 → int32 resampler on the calling thread (no OpenMP threads); NULL
/// with `*error` set when libsoxr refuses.
void *slimplay_soxr_create(double input_rate, double output_rate, const slimplay_soxr_spec *spec,
                           const char **error);

/// soxr_process: `input` NULL flushes what the filter holds. Returns NULL or libsoxr's error.
const char *slimplay_soxr_process(void *resampler, const int32_t *input, size_t input_frames, size_t *input_used,
                                  int32_t *output, size_t output_frames, size_t *output_done);

/// Samples clipped so far.
size_t slimplay_soxr_clips(void *resampler);

void slimplay_soxr_delete(void *resampler);

#endif
