#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
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

int slimplay_set_thread_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0 ? 0 : -errno;
}

int slimplay_queued_bytes(int fd) {
    int count = 0;
    return ioctl(fd, FIONREAD, &count) == 0 ? count : -1;
}

int slimplay_set_pipe_size(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

static int open_pipe_reader(int fd) {
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

int slimplay_pipe_is_drainable(int fd) {
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISFIFO(info.st_mode)) return 0;
    int reader = open_pipe_reader(fd);
    if (reader < 0) return 0;
    close(reader);
    return 1;
}

// What the pipe holds goes to /dev/null in one splice, which holds the pipe's lock throughout:
// the pipe's own reader, still reading, gets what came before it or nothing, never a piece from
// the middle of what is dropped (reads of a few KB at a time let it take a later piece after an
// earlier one).
long slimplay_drain_pipe(int fd) {
    int reader = open_pipe_reader(fd);
    if (reader < 0) return -errno;
    int sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (sink < 0) {
        int error = errno;
        close(reader);
        return -error;
    }
    int capacity = fcntl(fd, F_GETPIPE_SZ);
    size_t length = capacity > 0 ? (size_t)capacity : (size_t)1 << 20;
    long dropped = 0;
    for (;;) {
        ssize_t count = splice(reader, NULL, sink, NULL, length, SPLICE_F_NONBLOCK);
        if (count > 0) {
            dropped += count;
        } else if (count < 0 && errno == EINTR) {
            continue;
        } else if (count < 0 && errno != EAGAIN) {
            // A kernel or emulator without splice to /dev/null: read it out instead.
            char scrap[8192];
            ssize_t got;
            while ((got = read(reader, scrap, sizeof scrap)) > 0 || (got < 0 && errno == EINTR)) {
                if (got > 0) dropped += got;
            }
            break;
        } else {
            break;  // empty (EAGAIN) or no writer left
        }
    }
    close(sink);
    close(reader);
    return dropped;
}

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

// An object whose code the loader patched (text relocations) holds private, modified copies of
// those pages: dropping them would lose the patches.
static int has_text_relocations(const struct dl_phdr_info *info) {
  for (int index = 0; index < info->dlpi_phnum; index++) {
    const ElfW(Phdr) *segment = &info->dlpi_phdr[index];
    if (segment->p_type != PT_DYNAMIC) continue;
    for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + segment->p_vaddr); entry->d_tag != DT_NULL;
         entry++) {
      if (entry->d_tag == DT_TEXTREL) return 1;
      if (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_TEXTREL)) return 1;
    }
  }
  return 0;
}

// The vDSO is the kernel's own mapping, not a file.
static int is_vdso(const struct dl_phdr_info *info) {
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  for (int index = 0; vdso != 0 && index < info->dlpi_phnum; index++) {
    const ElfW(Phdr) *segment = &info->dlpi_phdr[index];
    uintptr_t start = info->dlpi_addr + segment->p_vaddr;
    if (segment->p_type == PT_LOAD && vdso >= start && vdso < start + segment->p_memsz) return 1;
  }
  return 0;
}

static int release_read_only_segments(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  long page = sysconf(_SC_PAGESIZE);
  long *released = data;
  if (is_vdso(info)) return 0;
  if (has_text_relocations(info)) return 0;
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
  return 0;
}

void slimplay_tune_allocator(void) {
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

long slimplay_release_program_pages(void) {
  long released = 0;
  dl_iterate_phdr(release_read_only_segments, &released);
  return released;
}

int slimplay_release_free_heap(void) {
  return malloc_trim(0);
}

#include <errno.h>
#include <time.h>

static struct timespec monotonic_deadline(int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    long nanoseconds = deadline.tv_nsec + (long)(timeout_ms % 1000) * 1000000L;
    deadline.tv_sec += timeout_ms / 1000 + nanoseconds / 1000000000L;
    deadline.tv_nsec = nanoseconds % 1000000000L;
    return deadline;
}

int slimplay_join_thread(pthread_t thread, int timeout_ms) {
    struct timespec deadline = monotonic_deadline(timeout_ms);
    int result;
    do {
        result = pthread_clockjoin_np(thread, NULL, CLOCK_MONOTONIC, &deadline);
    } while (result == EINTR);
    if (result == ETIMEDOUT) pthread_detach(thread);
    return result;
}

int slimplay_semaphore_wait(sem_t *semaphore, int timeout_ms) {
    struct timespec deadline = monotonic_deadline(timeout_ms < 0 ? 0 : timeout_ms);
    while (sem_clockwait(semaphore, CLOCK_MONOTONIC, &deadline) != 0) {
        if (errno != EINTR) return errno;
    }
    return 0;
}
