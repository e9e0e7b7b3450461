// A sound card whose crystal runs off its nominal rate, preloaded into a player: the rate the
// player sets on an ALSA PCM (`snd_pcm_hw_params_set_rate`) is opened FAKE_DAC_PPM parts per
// million off (44100 Hz at +45.35 ppm: 44102 Hz), while the player still counts time at the rate
// it asked for. Through the `pulse` plugin the sound server then takes the player's frames that
// much faster or slower, as a DAC with such a crystal would. Everything else goes to libasound.
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*set_rate_fn)(snd_pcm_t *, snd_pcm_hw_params_t *, unsigned int, int);

int snd_pcm_hw_params_set_rate(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int rate, int dir) {
  static set_rate_fn real;
  if (!real) real = (set_rate_fn)dlsym(RTLD_NEXT, "snd_pcm_hw_params_set_rate");
  const char *ppm_text = getenv("FAKE_DAC_PPM");
  double ppm = ppm_text ? atof(ppm_text) : 0;
  unsigned int skewed = (unsigned int)lround(rate * (1 + ppm / 1e6));
  int result = real(pcm, params, skewed, dir);
  fprintf(stderr, "fake DAC: %u Hz asked, %u Hz opened (%+.2f ppm): %s\n", rate, skewed,
          (skewed / (double)rate - 1) * 1e6, result == 0 ? "ok" : snd_strerror(result));
  return result;
}
