/* A sound card for `-o -`: reads standard input at a fixed byte rate, off by a chosen number of
 * parts per million as a real card's crystal is, in small pieces at exact deadlines, and copies
 * every byte to standard output. A second file gets "<CLOCK_MONOTONIC ns> <bytes read>" every
 * 20 ms of audio, so what the card had played at any instant can be read back to a frame.
 * Like a card, it does not catch up after an underrun: its schedule restarts when data returns.
 * Unlike a process, a card's clock does not stop when the CPU is busy: a read that is late because
 * this process was not scheduled (the pipe held data all along) keeps the schedule and catches up,
 * and every row is dated on the card's schedule, not when the process got round to the read.
 * A card's DMA is not late either, and a player reads its delay from what the card holds: a reader
 * that reads late leaves more in the pipe than a card would, and a player that measured it then
 * would see itself further behind than it is. So the reader runs at a real-time priority above the
 * players' output threads (SCHED_FIFO 50; where that is refused it says so and runs as it can).
 *
 *   paced_reader <bytes per second> <ppm> <bytes per read> <timing file>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t deadline) {
  struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u), .tv_nsec = (long)(deadline % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static int write_all(int fd, const char *data, size_t length) {
  while (length > 0) {
    ssize_t written = write(fd, data, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    data += written;
    length -= (size_t)written;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s <bytes per second> <ppm> <bytes per read> <timing file>\n", argv[0]);
    return 2;
  }
  double rate = atof(argv[1]) * (1.0 + atof(argv[2]) / 1e6);
  size_t piece = (size_t)atol(argv[3]);
  FILE *timing = fopen(argv[4], "w");
  if (rate <= 0 || piece == 0 || piece > 65536 || timing == NULL) {
    fprintf(stderr, "paced_reader: bad arguments\n");
    return 2;
  }
  setvbuf(timing, NULL, _IOLBF, 0);
  struct sched_param realtime = {.sched_priority = 50};
  if (sched_setscheduler(0, SCHED_FIFO, &realtime) != 0) {
    perror("paced_reader: no real-time priority");
  }
  static char buffer[65536];
  uint64_t total = 0, logged_at = 0, base_time = 0, base_bytes = 0;
  uint64_t log_every = (uint64_t)(rate / 50);
  for (;;) {
    /* Whether the pipe held data when this read came due: only a read that waited for it can be
     * an underrun. */
    struct pollfd input = {.fd = STDIN_FILENO, .events = POLLIN};
    int waiting = poll(&input, 1, 0) == 0;
    ssize_t got = read(STDIN_FILENO, buffer, piece);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    uint64_t now = now_ns();
    /* When this read was due on the card's schedule. */
    uint64_t scheduled = base_time + (uint64_t)((double)(total - base_bytes) * 1e9 / rate);
    if (base_time == 0 || (waiting && now > scheduled + 50000000u)) {
      base_time = now; /* the first audio, or an underrun: the card starts again from here */
      base_bytes = total;
      scheduled = now;
    }
    total += (uint64_t)got;
    if (write_all(STDOUT_FILENO, buffer, (size_t)got) != 0) break;
    if (total - logged_at >= log_every) {
      fprintf(timing, "%llu %llu\n", (unsigned long long)scheduled, (unsigned long long)total);
      logged_at = total;
    }
    /* The next read is due once the bytes read so far have played at the card's rate. */
    sleep_until(base_time + (uint64_t)((double)(total - base_bytes) * 1e9 / rate));
  }
  fprintf(timing, "%llu %llu\n", (unsigned long long)now_ns(), (unsigned long long)total);
  fclose(timing);
  return 0;
}
