/* broker/zap.h — who may connect when CURVE is on: a ZAP handler (ZeroMQ RFC 27) answering
 * libzmq's authentication requests from an allowlist of public keys, one certificate file
 * per key in a directory (`snakepit keygen` output, common/curve_cert.h).
 *
 * The handler's socket is bound at inproc://zeromq.zap.01 and served by the broker's own
 * loop. It must exist before any CURVE socket binds: libzmq lets every client in when no
 * handler is bound, so zap_new comes first and the broker refuses to start without it. The
 * key name becomes the connection's ZAP user id, which the broker logs with READY. */
#ifndef SP_ZAP_H
#define SP_ZAP_H
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"

#define ZAP_DOMAIN "snakepit"

typedef struct zap zap_t;

/* Binds the handler and loads allow_dir. NULL with the reason in err. */
zap_t *zap_new(void *zmq_ctx, loop_t *loop, const char *allow_dir, char *err, size_t errlen);
void zap_destroy(zap_t **self_p);
/* Reads the directory again (SIGHUP); on failure the old allowlist stays. 0 or -1. */
int zap_reload(zap_t *self, char *err, size_t errlen);
size_t zap_keys(const zap_t *self);
uint64_t zap_allowed(const zap_t *self);
uint64_t zap_denied(const zap_t *self);

#endif
