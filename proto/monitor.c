/* proto/monitor.c — see monitor.h. Each event is two frames: 6 bytes (the 16-bit event id,
 * then a 32-bit value) and the endpoint. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/log.h"
#include "monitor.h"

void *monitor_open(void *ctx, void *sock, int events)
{
    static unsigned n;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://sp-monitor-%d-%u", (int)getpid(), n++);
    if (zmq_socket_monitor(sock, ep, events) < 0) {
        log_warn("event=monitor_failed error=\"%s\"", zmq_strerror(errno));
        return NULL;
    }
    void *monitor = zmq_socket(ctx, ZMQ_PAIR);
    int linger = 0;
    if (monitor) zmq_setsockopt(monitor, ZMQ_LINGER, &linger, sizeof linger);
    if (!monitor || zmq_connect(monitor, ep) < 0) {
        log_warn("event=monitor_failed error=\"%s\"", zmq_strerror(errno));
        if (monitor) zmq_close(monitor);
        zmq_socket_monitor(sock, NULL, 0);
        return NULL;
    }
    return monitor;
}

void monitor_close(void *sock, void **monitor_p)
{
    if (!*monitor_p) return;
    zmq_socket_monitor(sock, NULL, 0);
    zmq_close(*monitor_p);
    *monitor_p = NULL;
}

int monitor_read(void *monitor)
{
    int seen = 0;
    for (int budget = 0; budget < 100; budget++) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            break;
        }
        uint16_t id = 0;
        if (zmq_msg_size(&ev) >= 2) memcpy(&id, zmq_msg_data(&ev), 2);
        int more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) { /* the endpoint frame */
            zmq_msg_init(&addr);
            zmq_msg_recv(&addr, monitor, 0);
            zmq_msg_close(&addr);
        }
        seen |= id;
    }
    return seen;
}
