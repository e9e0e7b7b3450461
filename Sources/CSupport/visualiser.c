// The output's samples in a shared memory segment, for a VU meter or spectrum in another process
// (jivelite on piCorePlayer reads it): the segment squeezelite's -v makes, by the same name, with
// the same layout, lock and update rules, so an unmodified reader works with either player.

#include "CSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { VISUALISER_SAMPLES = 16384 };  // 8192 stereo frames of 16 bits

// The readers' layout, in the platform's native ABI: field order and C types are the contract.
struct visualiser_segment {
  pthread_rwlock_t lock;  // process-shared; writers take it for writing, readers for reading
  uint32_t size;          // samples in `samples`
  uint32_t next;          // where the next sample goes: always even (left, right)
  bool running;           // false while silence plays (paused, stopped, buffering)
  uint32_t rate;
  time_t updated;         // wall-clock seconds of the last export
  int16_t samples[VISUALISER_SAMPLES];
};

static struct visualiser_segment *segment;

int slimplay_visualiser_open(const char *name) {
  int fd = shm_open(name, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  if (fd < 0) return -errno;
  // Readers run as other users (a touch screen's UI): the mode must not depend on our umask.
  (void)fchmod(fd, 0666);
  if (ftruncate(fd, sizeof *segment) != 0) {
    int code = errno;
    close(fd);
    return -code;
  }
  void *mapped = mmap(NULL, sizeof *segment, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int code = errno;
  close(fd);
  if (mapped == MAP_FAILED) return -code;
  segment = mapped;
  // A segment left by an earlier run (it outlives its writer) gets a fresh lock: a reader killed
  // while holding the old one must not lock the new writer out.
  pthread_rwlockattr_t attributes;
  pthread_rwlockattr_init(&attributes);
  pthread_rwlockattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_rwlock_init(&segment->lock, &attributes);
  pthread_rwlockattr_destroy(&attributes);
  segment->size = VISUALISER_SAMPLES;
  segment->running = false;
  segment->rate = 44100;
  return 0;
}

int slimplay_visualiser_export(const int32_t *frames, long count, unsigned rate) {
  // The output thread must not wait on a reader: a busy lock skips this chunk.
  if (segment == NULL || pthread_rwlock_trywrlock(&segment->lock) != 0) return 0;
  uint32_t next = segment->next % VISUALISER_SAMPLES & ~1u;
  for (long i = 0; i < count; i++) {
    segment->samples[next] = (int16_t)(frames[2 * i] >> 16);
    segment->samples[next + 1] = (int16_t)(frames[2 * i + 1] >> 16);
    next += 2;
    if (next == VISUALISER_SAMPLES) next = 0;
  }
  segment->next = next;
  segment->running = true;
  segment->rate = rate;
  segment->updated = time(NULL);
  pthread_rwlock_unlock(&segment->lock);
  return 1;
}

int slimplay_visualiser_silent(void) {
  if (segment == NULL) return 1;
  if (pthread_rwlock_trywrlock(&segment->lock) != 0) return 0;
  segment->running = false;
  pthread_rwlock_unlock(&segment->lock);
  return 1;
}
