#ifndef SLIMPLAY_CTLS_H
#define SLIMPLAY_CTLS_H

#include <stddef.h>

/// TLS for `https` streams through Debian's OpenSSL (libssl.so.3), loaded with dlopen when the
/// first such stream starts: a player that never plays one never maps the library. A session
/// works on memory buffers only (no socket): ciphertext in from the network, plaintext out, and
/// the other way round, so the caller's event loop does all the I/O.

typedef struct slimplay_tls slimplay_tls;

/// 1 when libssl.so.3 is where the dynamic linker looks (LD_LIBRARY_PATH, the system's library
/// directories), found without loading it.
int slimplay_tls_available(void);

/// Loads the library once; NULL when loaded, else why not.
const char *slimplay_tls_load(void);

/// A client session in its handshake, sending `server_name` (SNI) when not NULL; NULL with
/// `error` filled when the library cannot make one. Certificates are not verified (as
/// squeezelite and LMS do for streams).
slimplay_tls *slimplay_tls_new(const char *server_name, char *error, size_t error_size);
void slimplay_tls_free(slimplay_tls *tls);

/// Ciphertext from the network; returns 0, or -1 when the library refuses it.
int slimplay_tls_feed(slimplay_tls *tls, const void *bytes, size_t count);

/// Advances the handshake: 1 done, 0 waiting for the server (send what `drain` gives and feed its
/// answer), -1 failed (see `slimplay_tls_error`).
int slimplay_tls_handshake(slimplay_tls *tls);

/// Plaintext received: the count copied, 0 when more ciphertext is needed, -1 failed, -2 the
/// server ended the session (close_notify).
long slimplay_tls_read(slimplay_tls *tls, void *buffer, size_t size);

/// Encrypts plaintext for the network: the count taken (all of it once the handshake is done),
/// or -1.
long slimplay_tls_write(slimplay_tls *tls, const void *bytes, size_t count);

/// Ciphertext waiting to be sent: the count copied into `buffer` (0: none).
long slimplay_tls_drain(slimplay_tls *tls, void *buffer, size_t size);

/// Answers the server's close_notify with ours (then `drain` and close the connection).
void slimplay_tls_shutdown(slimplay_tls *tls);

/// Why the last call failed, as OpenSSL says it.
void slimplay_tls_error(slimplay_tls *tls, char *buffer, size_t size);

/// The protocol and cipher agreed, for the log ("TLSv1.3 TLS_AES_256_GCM_SHA384").
void slimplay_tls_describe(slimplay_tls *tls, char *buffer, size_t size);

#endif
