#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

#include "CSupport.h"

static void (*message_sink)(const char *message);

// ALSA's handler is variadic, which Swift cannot implement: format here, hand over a line.
static void forward_message(const char *file, int line, const char *function, int err, const char *format, ...) {
  char text[512];
  int used = snprintf(text, sizeof text, "%s:%d (%s): ", file, line, function);
  if (used < 0 || used >= (int)sizeof text) used = 0;
  va_list arguments;
  va_start(arguments, format);
  vsnprintf(text + used, sizeof text - used, format, arguments);
  va_end(arguments);
  if (err != 0) {
    size_t length = strlen(text);
    snprintf(text + length, sizeof text - length, ": %s", snd_strerror(err));
  }
  if (message_sink) message_sink(text);
}

void slimplay_alsa_set_message_sink(void (*sink)(const char *message)) {
  message_sink = sink;
  snd_lib_error_set_handler(sink ? forward_message : NULL);
}
