#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>

#include "CSupport.h"

int slimplay_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void slimplay_set_thread_name(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

int slimplay_queued_bytes(int fd) {
    int count = 0;
    return ioctl(fd, FIONREAD, &count) == 0 ? count : -1;
}

int slimplay_set_pipe_size(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

static int release_read_only_segments(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  // The first object reported is the program itself.
  long page = sysconf(_SC_PAGESIZE);
  long *released = data;
  for (int index = 0; index < info->dlpi_phnum; index++) {
    const ElfW(Phdr) *segment = &info->dlpi_phdr[index];
    if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
    uintptr_t start = info->dlpi_addr + segment->p_vaddr;
    uintptr_t end = start + segment->p_memsz;
    // Whole pages inside the segment only: a page shared with a writable segment keeps its data.
    start = (start + page - 1) & ~(uintptr_t)(page - 1);
    end &= ~(uintptr_t)(page - 1);
    if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) *released += (long)(end - start);
  }
  return 1;
}

long slimplay_release_program_pages(void) {
  long released = 0;
  dl_iterate_phdr(release_read_only_segments, &released);
  return released;
}
