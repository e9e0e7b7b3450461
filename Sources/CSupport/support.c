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
