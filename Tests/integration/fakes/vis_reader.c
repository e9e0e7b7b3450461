// A visualiser as jivelite's VU meter reads one: maps /dev/shm/squeezelite-<mac> by the layout
// squeezelite's -v documents, takes the segment's lock for reading, and prints every `interval`
// ms one line: seconds since its start, running, rate, and the RMS of each channel over the last
// 2048 frames before the write position (0 when not running). Usage: vis_reader <mac> <seconds> [interval_ms]

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct segment {
  pthread_rwlock_t lock;
  uint32_t size;
  uint32_t next;
  bool running;
  uint32_t rate;
  time_t updated;
  int16_t samples[16384];
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  char name[64];
  snprintf(name, sizeof name, "/squeezelite-%s", argv[1]);
  double seconds = atof(argv[2]);
  int interval = argc > 3 ? atoi(argv[3]) : 100;
  struct segment *s = NULL;
  double start = now();
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (now() - start < seconds) {
    if (s == NULL) {
      int fd = shm_open(name, O_RDWR, 0666);  // read-write: taking the lock writes to it
      if (fd >= 0) {
        void *p = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p != MAP_FAILED) s = p;
      }
    }
    if (s != NULL) {
      pthread_rwlock_rdlock(&s->lock);
      bool running = s->running;
      unsigned rate = s->rate, size = s->size, next = s->next;
      double sum[2] = {0, 0};
      const int frames = 2048;
      for (int i = 0; running && i < frames; i++) {
        unsigned at = (next + size - 2 * (frames - i)) % size;
        sum[0] += (double)s->samples[at] * s->samples[at];
        sum[1] += (double)s->samples[at + 1] * s->samples[at + 1];
      }
      pthread_rwlock_unlock(&s->lock);
      printf("%.3f %d %u %.1f %.1f\n", now() - start, running, rate, sqrt(sum[0] / frames), sqrt(sum[1] / frames));
    } else {
      printf("%.3f absent\n", now() - start);
    }
    usleep(interval * 1000);
  }
  return 0;
}
