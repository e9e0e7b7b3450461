#define _GNU_SOURCE
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "CSupport.h"

int slimplay_udp_socket(uint32_t address, uint16_t port) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int on = 1;
    struct sockaddr_in local = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {.s_addr = address}};
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        bind(fd, (struct sockaddr *)&local, sizeof local) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    /* The first SIOCGSTAMPNS turns the socket's receive timestamps on (no control messages:
     * SO_TIMESTAMPNS would add them to every read). */
    struct timespec ignored;
    (void)ioctl(fd, SIOCGSTAMPNS, &ignored);
    return fd;
}

static uint64_t nanoseconds(struct timespec time) {
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

uint64_t slimplay_datagram_arrival(int fd) {
    struct timespec stamp, wall, monotonic;
    if (ioctl(fd, SIOCGSTAMPNS, &stamp) != 0) return 0;
    /* The stamp is wall-clock time: moved onto the monotonic clock by the two clocks read now. */
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &monotonic);
    uint64_t received = nanoseconds(stamp), now = nanoseconds(wall), mono = nanoseconds(monotonic);
    /* Not in the last second (a wall clock set meanwhile, no datagram yet): not a time to go by. */
    if (received > now || now - received > 1000000000u || now - received > mono) return 0;
    return mono - (now - received);
}
