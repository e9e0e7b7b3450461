#ifndef SLIMPLAY_CSUPPORT_H
#define SLIMPLAY_CSUPPORT_H

/// Linux calls that Swift's Glibc module does not export.

/// An eventfd in non-blocking, close-on-exec mode; -1 on failure.
int slimplay_eventfd(void);

/// Names the calling thread (15 characters at most), for top and ps.
void slimplay_set_thread_name(const char *name);

#endif
