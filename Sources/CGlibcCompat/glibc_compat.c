// glibc 2.38 symbols for a static Swift runtime built against a newer glibc than the target's.
//
// Debian's aarch64 Swift runtime archives (the cross compiler for Raspberry Pi OS bookworm) were
// built with glibc 2.38 or newer, whose headers send strtol and sscanf to their C23 variants
// (`__isoc23_*`) and which has strlcpy/strlcat. bookworm's glibc 2.36 has none of them, so a
// `--static-swift-stdlib` link for it fails without these. They forward to 2.36's functions (the
// C23 ones differ only in also reading a "0b" prefix). Compiled only where glibc lacks them.
#define _GNU_SOURCE
#include <features.h>

#if defined(__aarch64__) && defined(__GLIBC__) && !__GLIBC_PREREQ(2, 38)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *text, char **end, int base) { return strtol(text, end, base); }
long long __isoc23_strtoll(const char *text, char **end, int base) { return strtoll(text, end, base); }
unsigned long __isoc23_strtoul(const char *text, char **end, int base) { return strtoul(text, end, base); }
unsigned long long __isoc23_strtoull(const char *text, char **end, int base) { return strtoull(text, end, base); }

int __isoc23_vsscanf(const char *text, const char *format, va_list arguments) {
  return vsscanf(text, format, arguments);
}

int __isoc23_sscanf(const char *text, const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  int matched = vsscanf(text, format, arguments);
  va_end(arguments);
  return matched;
}

// BSD semantics: copies at most size - 1 bytes, always terminates (size > 0), returns strlen(source).
size_t strlcpy(char *destination, const char *source, size_t size) {
  size_t length = strlen(source);
  if (size > 0) {
    size_t copied = length < size - 1 ? length : size - 1;
    memcpy(destination, source, copied);
    destination[copied] = '\0';
  }
  return length;
}

// Appends within a buffer of `size` bytes in all; returns the length it tried to make.
size_t strlcat(char *destination, const char *source, size_t size) {
  size_t used = strnlen(destination, size);
  if (used == size) return size + strlen(source);
  return used + strlcpy(destination + used, source, size - used);
}
#endif
