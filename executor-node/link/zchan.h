/* executor-node/link/zchan.h — the node ⇄ zygote channel: one SOCK_SEQPACKET socketpair per
 * zygote, carrying typed messages of any size. A message larger than one datagram is split:
 * the first datagram has a 24-byte header with the total length, the rest follow raw, and
 * SEQPACKET keeps them in order and whole. Both ends are non-blocking and queue what the
 * peer cannot take yet, so neither process ever blocks on the other. What each type carries is
 * zmsg.h's business: this module only moves (type, id, payload) whole. */
#ifndef SP_ZCHAN_H
#define SP_ZCHAN_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"

#define ZCHAN_MAX_MSG (64u << 20)

typedef struct zchan zchan_t;
typedef void(zchan_msg_fn)(void *arg, uint8_t type, const uint8_t id[ID_BYTES],
                           const uint8_t *payload, size_t len);

zchan_t *zchan_new(int fd); /* takes ownership of fd, makes it non-blocking */
void     zchan_destroy(zchan_t **self_p);
int      zchan_fd(const zchan_t *self);
/* Queues a message and sends what the socket takes now. 0, or -1 when the peer is gone. */
int      zchan_send(zchan_t *self, uint8_t type, const uint8_t *id, const void *payload, size_t len);
int      zchan_flush(zchan_t *self);       /* 0 all sent, 1 some left (wait for POLLOUT), -1 */
int      zchan_pending(const zchan_t *self);
/* Reads every datagram waiting and calls fn per whole message. 0, or -1 on EOF or a
 * protocol violation (the caller closes the channel). */
int      zchan_read(zchan_t *self, zchan_msg_fn *fn, void *arg);

#endif
