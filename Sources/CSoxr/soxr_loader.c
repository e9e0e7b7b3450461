#include "CSoxr.h"

#include <dlfcn.h>
#include <pthread.h>
#include <soxr.h>

_Static_assert(SLIMPLAY_SOXR_QQ == SOXR_QQ && SLIMPLAY_SOXR_LQ == SOXR_LQ && SLIMPLAY_SOXR_MQ == SOXR_MQ &&
                   SLIMPLAY_SOXR_HQ == SOXR_HQ && SLIMPLAY_SOXR_VHQ == SOXR_VHQ,
               "recipe constants");
_Static_assert(SLIMPLAY_SOXR_INTERMEDIATE_PHASE == SOXR_INTERMEDIATE_PHASE &&
                   SLIMPLAY_SOXR_MINIMUM_PHASE == SOXR_MINIMUM_PHASE && SLIMPLAY_SOXR_STEEP_FILTER == SOXR_STEEP_FILTER,
               "recipe flags");

// libsoxr's entry points, looked up once.
static struct {
  soxr_t (*create)(double, double, unsigned, soxr_error_t *, soxr_io_spec_t const *, soxr_quality_spec_t const *,
                   soxr_runtime_spec_t const *);
  soxr_error_t (*process)(soxr_t, soxr_in_t, size_t, size_t *, soxr_out_t, size_t, size_t *);
  size_t *(*num_clips)(soxr_t);
  void (*delete)(soxr_t);
  soxr_io_spec_t (*io_spec)(soxr_datatype_t, soxr_datatype_t);
  soxr_quality_spec_t (*quality_spec)(unsigned long, unsigned long);
  soxr_runtime_spec_t (*runtime_spec)(unsigned);
} library;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error = "not loaded";

static void load(void) {
  void *handle = dlopen("libsoxr.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    load_error = dlerror();
    return;
  }
  library.create = dlsym(handle, "soxr_create");
  library.process = dlsym(handle, "soxr_process");
  library.num_clips = dlsym(handle, "soxr_num_clips");
  library.delete = dlsym(handle, "soxr_delete");
  library.io_spec = dlsym(handle, "soxr_io_spec");
  library.quality_spec = dlsym(handle, "soxr_quality_spec");
  library.runtime_spec = dlsym(handle, "soxr_runtime_spec");
  if (!library.create || !library.process || !library.num_clips || !library.delete || !library.io_spec ||
      !library.quality_spec || !library.runtime_spec) {
    load_error = "libsoxr.so.0 lacks a soxr_ function";
    return;
  }
  load_error = NULL;
}

const char *slimplay_soxr_load(void) {
  pthread_once(&load_once, load);
  return load_error;
}

void *slimplay_soxr_create(double input_rate, double output_rate, const slimplay_soxr_spec *spec,
                           const char **error) {
  const char *why = slimplay_soxr_load();
  if (why) {
    *error = why;
    return NULL;
  }
  soxr_io_spec_t io = library.io_spec(SOXR_INT32_I, SOXR_INT32_I);
  io.scale = spec->scale;
  soxr_quality_spec_t quality = library.quality_spec(spec->recipe, spec->flags);
  if (spec->precision > 0) quality.precision = spec->precision;
  if (spec->passband_end > 0) quality.passband_end = spec->passband_end;
  if (spec->stopband_begin > 0) quality.stopband_begin = spec->stopband_begin;
  if (spec->phase_response > -1) quality.phase_response = spec->phase_response;
  // One thread: the decoder thread's own, at its own priority.
  soxr_runtime_spec_t runtime = library.runtime_spec(1);
  soxr_error_t failure = NULL;
  soxr_t resampler = library.create(input_rate, output_rate, 2, &failure, &io, &quality, &runtime);
  if (failure) {
    if (resampler) library.delete(resampler);
    *error = failure;
    return NULL;
  }
  *error = NULL;
  return resampler;
}

const char *slimplay_soxr_process(void *resampler, const int32_t *input, size_t input_frames, size_t *input_used,
                                  int32_t *output, size_t output_frames, size_t *output_done) {
  return library.process(resampler, input, input_frames, input_used, output, output_frames, output_done);
}

size_t slimplay_soxr_clips(void *resampler) { return *library.num_clips(resampler); }

void slimplay_soxr_delete(void *resampler) { library.delete(resampler); }
