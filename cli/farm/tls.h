/* cli/farm/tls.h — the client side of TLS under http1.c, so `snakepit run --url https://…` reaches
 * a farm behind a TLS proxy or the front-end's own --tls-cert. GnuTLS (libmicrohttpd's, already
 * on every machine that builds snakepit); the server's certificate is checked against the
 * system's trust store, or a CA file for a private CA, and against the host the URL names. */
#ifndef SP_TLS_H
#define SP_TLS_H
#include <stddef.h>
#include <sys/types.h>

typedef struct tls_conn tls_conn_t;

/* Runs the handshake over the connected socket fd (which stays the caller's) within
 * timeout_ms. ca_file NULL or empty: the system's trust store. NULL with the reason in err. */
tls_conn_t *tls_connect(int fd, const char *host, const char *ca_file, long timeout_ms, char *err,
                        size_t errlen);
/* Like write(2) and read(2): bytes done, 0 at the end of the stream (read), -1 on error. */
ssize_t tls_write(tls_conn_t *self, const void *data, size_t len);
ssize_t tls_read(tls_conn_t *self, void *data, size_t len);
/* 1 when decrypted bytes wait to be read (poll(2) on the socket would not see them). */
int tls_pending(const tls_conn_t *self);
/* Sends close_notify and frees the session. */
void tls_close(tls_conn_t **self_p);

#endif
