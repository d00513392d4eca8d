/* proto/wire_zmq.c — see wire_zmq.h. */
#include <errno.h>
#include <string.h>

#include "wire_zmq.h"

int wire_recv(void *socket, wire_msg_t *msg, int has_identity)
{
    msg->n = 0;
    msg->overflow = 0;
    msg->bytes = 0;
    msg->frames.n = 0;
    msg->identity = (frame_t){NULL, 0};
    int more = 1, first = 1;
    while (more) {
        zmq_msg_t  scratch;
        int        keep = msg->n < WIRE_MAX_FRAMES + 1;
        zmq_msg_t *part = keep ? &msg->parts[msg->n] : &scratch;
        zmq_msg_init(part);
        if (zmq_msg_recv(part, socket, first ? ZMQ_DONTWAIT : 0) < 0) {
            int e = errno;
            zmq_msg_close(part);
            if (first && e == EAGAIN) return 0;
            wire_msg_close(msg);
            errno = e;
            return -1;
        }
        first = 0;
        msg->bytes += zmq_msg_size(part);
        more = zmq_msg_more(part);
        if (keep)
            msg->n++;
        else {
            msg->overflow = 1;
            zmq_msg_close(part);
        }
    }
    int start = 0;
    if (has_identity && msg->n > 0) {
        msg->identity = (frame_t){zmq_msg_data(&msg->parts[0]), zmq_msg_size(&msg->parts[0])};
        start = 1;
    }
    for (int i = start; i < msg->n && msg->frames.n < WIRE_MAX_FRAMES; i++)
        msg->frames.f[msg->frames.n++] =
            (frame_t){zmq_msg_data(&msg->parts[i]), zmq_msg_size(&msg->parts[i])};
    if (msg->n - start > WIRE_MAX_FRAMES) msg->overflow = 1;
    return 1;
}

void wire_msg_close(wire_msg_t *msg)
{
    for (int i = 0; i < msg->n; i++) zmq_msg_close(&msg->parts[i]);
    msg->n = 0;
    msg->frames.n = 0;
}

int wire_send(void *socket, const frame_t *identity, const frame_t *frames, int n)
{
    if (identity) {
        if (zmq_send(socket, identity->data, identity->len, ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        /* Once the first part is queued ZeroMQ guarantees the rest go atomically; a failure
         * mid-message can only be EHOSTUNREACH/EAGAIN on the first part. */
        if (zmq_send(socket, frames[i].data, frames[i].len, flags) < 0) return -1;
    }
    return 0;
}
