/* proto/wire_zmq.h — moving snakepit frames on and off ZeroMQ sockets. A received message
 * keeps its zmq_msg_t parts alive until wire_msg_close, and frames_t points into them:
 * nothing is copied on the way through the broker. */
#ifndef SP_WIRE_ZMQ_H
#define SP_WIRE_ZMQ_H
#include <zmq.h>

#include "wire.h"

typedef struct {
    zmq_msg_t parts[WIRE_MAX_FRAMES + 1]; /* + the ROUTER identity */
    int       n;          /* parts held (to close) */
    int       overflow;   /* more parts arrived than we keep: the message is malformed */
    size_t    bytes;      /* total size */
    frames_t  frames;     /* the parts after the identity (when has_identity) */
    frame_t   identity;   /* ROUTER sockets only */
} wire_msg_t;

/* Receives one whole multipart message without blocking. 1 when one was read, 0 when none
 * was waiting, -1 on a socket error. has_identity: the socket is a ROUTER. */
int  wire_recv(void *socket, wire_msg_t *msg, int has_identity);
void wire_msg_close(wire_msg_t *msg);

/* Sends frames (and an identity first when not NULL) with ZMQ_DONTWAIT. 0, or -1 with errno
 * (EHOSTUNREACH for a ROUTER peer that is gone, EAGAIN when its pipe is full). */
int wire_send(void *socket, const frame_t *identity, const frame_t *frames, int n);

#endif
