// The kernel's GPIO character device (uAPI v2) for a machine without one, preloaded into the
// player: opening FAKE_GPIO_CHIP (default /dev/gpiochip0) gives a descriptor, a line request on it
// gives another, and every request and value set is appended to FAKE_GPIO_LOG with the monotonic
// time, so a test can see what the player asked of the line and when. Everything else goes to libc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int chip_fd = -1;
static int line_fd = -1;

static int (*real_open_fn(void))(const char *, int, ...) {
  static int (*fn)(const char *, int, ...);
  if (!fn) fn = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  return fn;
}

static void note(const char *format, ...) {
  const char *path = getenv("FAKE_GPIO_LOG");
  if (!path) return;
  FILE *log = fopen(path, "a");
  if (!log) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  fprintf(log, "%ld.%06ld ", (long)now.tv_sec, now.tv_nsec / 1000);
  va_list args;
  va_start(args, format);
  vfprintf(log, format, args);
  va_end(args);
  fputc('\n', log);
  fclose(log);
}

static int open_chip(const char *path, int *handled) {
  const char *chip = getenv("FAKE_GPIO_CHIP");
  *handled = strcmp(path, chip ? chip : "/dev/gpiochip0") == 0;
  if (!*handled) return -1;
  chip_fd = real_open_fn()("/dev/null", O_RDWR | O_CLOEXEC);
  note("open %s", path);
  return chip_fd;
}

// open and open64 alike: the chip, or libc's own function of that name.
#define FAKE_OPEN(symbol)                                                        \
  int symbol(const char *path, int flags, ...) {                                 \
    int handled;                                                                 \
    int fd = open_chip(path, &handled);                                          \
    if (handled) return fd;                                                      \
    va_list args;                                                                \
    va_start(args, flags);                                                       \
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;    \
    va_end(args);                                                                \
    static int (*fn)(const char *, int, ...);                                    \
    if (!fn) fn = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #symbol);    \
    return fn(path, flags, mode);                                                \
  }

FAKE_OPEN(open)
FAKE_OPEN(open64)

int ioctl(int fd, unsigned long request, ...) {
  va_list args;
  va_start(args, request);
  void *argument = va_arg(args, void *);
  va_end(args);
  if (fd >= 0 && fd == chip_fd && request == GPIO_V2_GET_LINE_IOCTL) {
    struct gpio_v2_line_request *line = argument;
    line_fd = real_open_fn()("/dev/null", O_RDWR | O_CLOEXEC);
    line->fd = line_fd;
    note("request lines=%u line=%u flags=%s%s consumer=%s", line->num_lines, line->offsets[0],
         (line->config.flags & GPIO_V2_LINE_FLAG_OUTPUT) ? "output" : "input",
         (line->config.flags & GPIO_V2_LINE_FLAG_ACTIVE_LOW) ? ",active-low" : "", line->consumer);
    return 0;
  }
  if (fd >= 0 && fd == line_fd && request == GPIO_V2_LINE_SET_VALUES_IOCTL) {
    struct gpio_v2_line_values *values = argument;
    note("set mask=%llu value=%llu", (unsigned long long)values->mask, (unsigned long long)values->bits);
    return 0;
  }
  static int (*fn)(int, unsigned long, ...);
  if (!fn) fn = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  return fn(fd, request, argument);
}
