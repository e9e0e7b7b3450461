#ifndef SLIMPLAY_CSUPPORT_H
#define SLIMPLAY_CSUPPORT_H

/// Linux calls that Swift's Glibc module does not export.

/// An eventfd in non-blocking, close-on-exec mode; -1 on failure.
int slimplay_eventfd(void);

/// Names the calling thread (15 characters at most), for top and ps.
void slimplay_set_thread_name(const char *name);

/// Sets the nice value of the calling thread alone (Linux keeps one per thread); 0 or -errno.
int slimplay_set_thread_nice(int nice);

/// Waits at most `timeout_ms` for `thread` to end; past that, detaches it (its resources go when
/// it ends by itself). 0 when joined, ETIMEDOUT when detached, another errno on misuse. The limit
/// is kept on the monotonic clock: setting the wall clock does not change it.
#include <pthread.h>
int slimplay_join_thread(pthread_t thread, int timeout_ms);

/// Waits at most `timeout_ms` for `semaphore` (sem_clockwait on the monotonic clock, so that
/// setting the wall clock neither stretches nor cuts the wait), resuming after signal handlers.
/// 0 when taken, ETIMEDOUT when the time ran out, another errno on misuse.
#include <semaphore.h>
int slimplay_semaphore_wait(sem_t *semaphore, int timeout_ms);

/// Bytes waiting in a pipe or socket (FIONREAD); works on a pipe's write end too. -1 on failure.
int slimplay_queued_bytes(int fd);

/// Sets a pipe's capacity (F_SETPIPE_SZ); returns the size granted, or -1 (not a pipe).
int slimplay_set_pipe_size(int fd, int size);

/// 1 when `fd` is a pipe that this process may also open for reading (through /proc/self/fd), so
/// that what it queued can be taken back out; 0 otherwise (not a pipe, or another user's pipe).
int slimplay_pipe_is_drainable(int fd);

/// Reads and throws away everything queued in the pipe `fd` writes to, through a read end opened
/// for the purpose and closed again (a pipe has no other way to drop what it holds; keeping a read
/// end open would hide the reader's exit from the writer). Returns the bytes dropped, or -errno.
long slimplay_drain_pipe(int fd);

/// Sets glibc's allocator up for a small resident footprint; call before any thread starts.
/// One arena for every thread (nothing on the realtime path allocates, so there is no contention
/// to spread), and a fixed 128 KiB threshold above which blocks are mapped on their own and
/// returned when freed. 128 KiB is glibc's starting value; fixed, it no longer rises after the
/// first large free, which would leave later large temporary buffers resident in the arena.
void slimplay_tune_allocator(void);

/// Unmaps the pages of the read-only segments (code, constants) of the program and of every
/// library it loaded from this process; they fault back from the page cache when next used.
/// Objects with text relocations and the vDSO are left alone. Returns the bytes covered.
long slimplay_release_program_pages(void);

/// Returns the allocator's free memory to the system (`malloc_trim`): pages wholly inside free
/// blocks, anywhere in the heap. Holds the allocator's lock while it works, so never call it from
/// a thread that must not wait. Returns 1 if any memory went back.
int slimplay_release_free_heap(void);

/// Sends alsa-lib's own messages (otherwise printed to stderr on every failed open) to `sink`,
/// one formatted line at a time; NULL restores alsa-lib's default.
void slimplay_alsa_set_message_sink(void (*sink)(const char *message));

/// Requests `line` of the GPIO chip at `chip_path` as an output, inactive (`active_low`: active is
/// the low level); the line's descriptor, or -errno.
int slimplay_gpio_request_output(const char *chip_path, unsigned line, int active_low, const char *consumer);

/// Drives a requested line active (1) or inactive (0); 0, or -errno.
int slimplay_gpio_set(int line_fd, int active);

/// `-v`: opens (creating it if needed) the visualiser segment `name` ("/squeezelite-<mac>"), the
/// one squeezelite's -v writes and jivelite reads. 0, or -errno.
int slimplay_visualiser_open(const char *name);

/// Copies `count` stereo frames (32-bit, left-justified) into the segment as 16-bit samples and
/// marks it running at `rate`. Never waits: 0 when a reader held the lock (the chunk is skipped),
/// 1 otherwise (or with no segment open). No allocation and no system call.
#include <stdint.h>
int slimplay_visualiser_export(const int32_t *frames, long count, unsigned rate);

/// Marks the segment not running (silence plays). 0 when a reader held the lock: call again.
int slimplay_visualiser_silent(void);

/// `-i`: loads liblirc_client.so.0, connects to lircd as `program` and reads `lircrc`. 0; 1 when
/// the lircrc could not be read (button names still work); -1 without the library; -2 without lircd.
int slimplay_lirc_open(const char *program, const char *lircrc);

/// Waits for the next LIRC event: lircd's line ("<code> <repeat> <button> <remote>") in `line`,
/// and the lircrc `config` string for it, if any, in `command` (else empty). 0, or -1 once lircd
/// is gone.
int slimplay_lirc_next(char *line, long line_size, char *command, long command_size);

#endif

/// A UDP socket (IPv4, non-blocking, close-on-exec, SO_REUSEADDR) bound to `address` (network
/// order) and `port`, with the kernel's receive timestamps on. The socket, or -errno.
#include <stdint.h>
int slimplay_udp_socket(uint32_t address, uint16_t port);

/// When the kernel received the datagram last read from `fd` (SIOCGSTAMPNS), on CLOCK_MONOTONIC
/// (ns); 0 when it has no such time. The time a thread got round to reading it can be much later.
uint64_t slimplay_datagram_arrival(int fd);
