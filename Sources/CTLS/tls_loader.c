#include "CTLS.h"

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIBRARY "libssl.so.3"

// Where Debian's dynamic linker finds libraries, for this machine's architecture.
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__arm__)
#define MULTIARCH "arm-linux-gnueabihf"
#elif defined(__i386__)
#define MULTIARCH "i386-linux-gnu"
#else
#define MULTIARCH ""
#endif

// The OpenSSL entry points used, looked up once.
static struct {
  int (*init_ssl)(uint64_t, const OPENSSL_INIT_SETTINGS *);
  const SSL_METHOD *(*client_method)(void);
  SSL_CTX *(*ctx_new)(const SSL_METHOD *);
  SSL *(*ssl_new)(SSL_CTX *);
  void (*ssl_free)(SSL *);
  void (*set_bio)(SSL *, BIO *, BIO *);
  void (*set_connect_state)(SSL *);
  long (*ssl_ctrl)(SSL *, int, long, void *);
  int (*do_handshake)(SSL *);
  int (*ssl_read)(SSL *, void *, int);
  int (*ssl_write)(SSL *, const void *, int);
  int (*ssl_shutdown)(SSL *);
  int (*get_error)(const SSL *, int);
  const char *(*get_version)(const SSL *);
  const SSL_CIPHER *(*get_current_cipher)(const SSL *);
  const char *(*cipher_name)(const SSL_CIPHER *);
  BIO *(*bio_new)(const BIO_METHOD *);
  const BIO_METHOD *(*bio_s_mem)(void);
  int (*bio_read)(BIO *, void *, int);
  int (*bio_write)(BIO *, const void *, int);
  int (*bio_free)(BIO *);
  unsigned long (*err_get)(void);
  void (*err_clear)(void);
  void (*err_string)(unsigned long, char *, size_t);
} library;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error = "not loaded";
static SSL_CTX *context;

struct slimplay_tls {
  SSL *ssl;
  BIO *network_in;   // ciphertext from the server, read by the session
  BIO *network_out;  // ciphertext for the server, written by the session
  char error[200];
};

static int found(const char *directory) {
  if (!directory || !*directory) return 0;
  char path[512];
  snprintf(path, sizeof path, "%s/%s", directory, LIBRARY);
  return access(path, R_OK) == 0;
}

int slimplay_tls_available(void) {
  const char *paths = getenv("LD_LIBRARY_PATH");
  if (paths) {
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", paths);
    char *rest = copy;
    for (char *directory; (directory = strsep(&rest, ":"));)
      if (found(directory)) return 1;
  }
  static const char *const system_directories[] = {"/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib", "/usr/lib",
                                                   "/usr/local/lib"};
  for (size_t i = 0; i < sizeof system_directories / sizeof *system_directories; i++)
    if (found(system_directories[i])) return 1;
  return 0;
}

#define LOOK_UP(field, name)                                                                                     \
  if (!(library.field = dlsym(handle, name))) missing = name

static void load(void) {
  void *handle = dlopen(LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    load_error = dlerror();
    return;
  }
  const char *missing = NULL;
  LOOK_UP(init_ssl, "OPENSSL_init_ssl");
  LOOK_UP(client_method, "TLS_client_method");
  LOOK_UP(ctx_new, "SSL_CTX_new");
  LOOK_UP(ssl_new, "SSL_new");
  LOOK_UP(ssl_free, "SSL_free");
  LOOK_UP(set_bio, "SSL_set_bio");
  LOOK_UP(set_connect_state, "SSL_set_connect_state");
  LOOK_UP(ssl_ctrl, "SSL_ctrl");
  LOOK_UP(do_handshake, "SSL_do_handshake");
  LOOK_UP(ssl_read, "SSL_read");
  LOOK_UP(ssl_write, "SSL_write");
  LOOK_UP(ssl_shutdown, "SSL_shutdown");
  LOOK_UP(get_error, "SSL_get_error");
  LOOK_UP(get_version, "SSL_get_version");
  LOOK_UP(get_current_cipher, "SSL_get_current_cipher");
  LOOK_UP(cipher_name, "SSL_CIPHER_get_name");
  // libcrypto's, reached through libssl's own dependency.
  LOOK_UP(bio_new, "BIO_new");
  LOOK_UP(bio_s_mem, "BIO_s_mem");
  LOOK_UP(bio_read, "BIO_read");
  LOOK_UP(bio_write, "BIO_write");
  LOOK_UP(bio_free, "BIO_free");
  LOOK_UP(err_get, "ERR_get_error");
  LOOK_UP(err_clear, "ERR_clear_error");
  LOOK_UP(err_string, "ERR_error_string_n");
  if (missing) {
    static char text[128];
    snprintf(text, sizeof text, LIBRARY " lacks %s", missing);
    load_error = text;
    return;
  }
  library.init_ssl(0, NULL);
  context = library.ctx_new(library.client_method());
  if (!context) {
    load_error = "OpenSSL could not make a TLS client context";
    return;
  }
  load_error = NULL;
}

const char *slimplay_tls_load(void) {
  pthread_once(&load_once, load);
  return load_error;
}

static void record_error(slimplay_tls *tls, const char *what, int code) {
  unsigned long queued = library.err_get();
  char detail[160] = "";
  if (queued) library.err_string(queued, detail, sizeof detail);
  snprintf(tls->error, sizeof tls->error, "%s (SSL error %d%s%s)", what, code, *detail ? ": " : "", detail);
  library.err_clear();
}

slimplay_tls *slimplay_tls_new(const char *server_name, char *error, size_t error_size) {
  const char *why = slimplay_tls_load();
  if (why) {
    snprintf(error, error_size, "%s", why);
    return NULL;
  }
  slimplay_tls *tls = calloc(1, sizeof *tls);
  if (!tls) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  tls->ssl = library.ssl_new(context);
  tls->network_in = library.bio_new(library.bio_s_mem());
  tls->network_out = library.bio_new(library.bio_s_mem());
  if (!tls->ssl || !tls->network_in || !tls->network_out) {
    snprintf(error, error_size, "OpenSSL could not make a session");
    if (tls->ssl) library.ssl_free(tls->ssl);
    tls->ssl = NULL;
    slimplay_tls_free(tls);
    return NULL;
  }
  library.set_bio(tls->ssl, tls->network_in, tls->network_out);  // the session owns both now
  library.set_connect_state(tls->ssl);
  if (server_name && *server_name)
    library.ssl_ctrl(tls->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)server_name);
  return tls;
}

void slimplay_tls_free(slimplay_tls *tls) {
  if (!tls) return;
  if (tls->ssl) {
    library.ssl_free(tls->ssl);  // and the buffers it was given
  } else {
    if (tls->network_in) library.bio_free(tls->network_in);
    if (tls->network_out) library.bio_free(tls->network_out);
  }
  free(tls);
}

int slimplay_tls_feed(slimplay_tls *tls, const void *bytes, size_t count) {
  const char *next = bytes;
  while (count > 0) {
    int chunk = count > (1 << 30) ? (1 << 30) : (int)count;
    int written = library.bio_write(tls->network_in, next, chunk);
    if (written <= 0) {
      snprintf(tls->error, sizeof tls->error, "the TLS input buffer refused %zu bytes", count);
      return -1;
    }
    next += written;
    count -= (size_t)written;
  }
  return 0;
}

int slimplay_tls_handshake(slimplay_tls *tls) {
  library.err_clear();
  int status = library.do_handshake(tls->ssl);
  if (status == 1) return 1;
  int code = library.get_error(tls->ssl, status);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return 0;
  record_error(tls, "TLS handshake failed", code);
  return -1;
}

long slimplay_tls_read(slimplay_tls *tls, void *buffer, size_t size) {
  library.err_clear();
  int count = library.ssl_read(tls->ssl, buffer, size > (1 << 30) ? (1 << 30) : (int)size);
  if (count > 0) return count;
  int code = library.get_error(tls->ssl, count);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return 0;
  if (code == SSL_ERROR_ZERO_RETURN) return -2;
  record_error(tls, "TLS read failed", code);
  return -1;
}

long slimplay_tls_write(slimplay_tls *tls, const void *bytes, size_t count) {
  library.err_clear();
  int taken = library.ssl_write(tls->ssl, bytes, count > (1 << 30) ? (1 << 30) : (int)count);
  if (taken > 0) return taken;
  int code = library.get_error(tls->ssl, taken);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return 0;
  record_error(tls, "TLS write failed", code);
  return -1;
}

long slimplay_tls_drain(slimplay_tls *tls, void *buffer, size_t size) {
  int count = library.bio_read(tls->network_out, buffer, size > (1 << 30) ? (1 << 30) : (int)size);
  return count > 0 ? count : 0;
}

void slimplay_tls_shutdown(slimplay_tls *tls) {
  library.err_clear();
  library.ssl_shutdown(tls->ssl);
  library.err_clear();
}

void slimplay_tls_error(slimplay_tls *tls, char *buffer, size_t size) { snprintf(buffer, size, "%s", tls->error); }

void slimplay_tls_describe(slimplay_tls *tls, char *buffer, size_t size) {
  const SSL_CIPHER *cipher = library.get_current_cipher(tls->ssl);
  snprintf(buffer, size, "%s %s", library.get_version(tls->ssl), cipher ? library.cipher_name(cipher) : "?");
}
