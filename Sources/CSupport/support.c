#define _GNU_SOURCE
#include <pthread.h>
#include <sys/eventfd.h>

#include "CSupport.h"

int slimplay_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void slimplay_set_thread_name(const char *name) {
    pthread_setname_np(pthread_self(), name);
}
