/* executor-node/link/zchan.c — see zchan.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "zchan.h"

#define DGRAM_MAX (64u * 1024u)
#define HDR_LEN   24u

struct zchan {
    int      fd;
    buf_t    out;       /* queued datagrams: [u32 len][bytes]… */
    size_t   out_off;   /* first unsent record */
    uint8_t  in_type;   /* message being assembled */
    uint8_t  in_id[ID_BYTES];
    uint8_t *in_data;
    size_t   in_len;    /* total expected */
    size_t   in_have;
    int      assembling;
    uint8_t  dgram[DGRAM_MAX];
};

zchan_t *zchan_new(int fd)
{
    zchan_t *self = xcalloc(1, sizeof *self);
    self->fd = fd;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int size = 4 << 20; /* capped by net.core.wmem_max; fine either way */
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    buf_init(&self->out);
    return self;
}

void zchan_destroy(zchan_t **self_p)
{
    assert(self_p);
    zchan_t *self = *self_p;
    if (!self) return;
    if (self->fd >= 0) close(self->fd);
    buf_free(&self->out);
    free(self->in_data);
    free(self);
    *self_p = NULL;
}

int zchan_fd(const zchan_t *self)
{
    return self->fd;
}

int zchan_pending(const zchan_t *self)
{
    return self->out_off < self->out.len;
}

static void s_queue(zchan_t *self, const void *a, size_t alen, const void *b, size_t blen)
{
    uint32_t len = (uint32_t)(alen + blen);
    size_t   want = self->out.len + sizeof len + len + 1;
    if (want > self->out.cap) { /* grow by hand: realloc would free a copy we cannot scrub */
        size_t cap = self->out.cap ? self->out.cap : 4096;
        while (cap < want) cap *= 2;
        uint8_t *data = xmalloc(cap);
        if (self->out.len) memcpy(data, self->out.data, self->out.len);
        if (self->out.data) explicit_bzero(self->out.data, self->out.cap);
        free(self->out.data);
        self->out.data = data;
        self->out.cap = cap;
    }
    buf_append(&self->out, &len, sizeof len);
    buf_append(&self->out, a, alen);
    if (blen) buf_append(&self->out, b, blen);
}

int zchan_send(zchan_t *self, uint8_t type, const uint8_t *id, const void *payload, size_t len)
{
    if (len > ZCHAN_MAX_MSG) return -1;
    uint8_t hdr[HDR_LEN] = {0};
    hdr[0] = type;
    uint32_t total = (uint32_t)len;
    memcpy(hdr + 4, &total, 4);
    if (id) memcpy(hdr + 8, id, ID_BYTES);
    size_t first = len < DGRAM_MAX - HDR_LEN ? len : DGRAM_MAX - HDR_LEN;
    s_queue(self, hdr, HDR_LEN, payload, first);
    for (size_t off = first; off < len; off += DGRAM_MAX) {
        size_t n = len - off < DGRAM_MAX ? len - off : DGRAM_MAX;
        s_queue(self, (const uint8_t *)payload + off, n, NULL, 0);
    }
    return zchan_flush(self) < 0 ? -1 : 0;
}

int zchan_flush(zchan_t *self)
{
    while (self->out_off < self->out.len) {
        uint32_t len;
        memcpy(&len, self->out.data + self->out_off, sizeof len);
        ssize_t n = send(self->fd, self->out.data + self->out_off + sizeof len, len,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
            return -1;
        }
        self->out_off += sizeof len + len;
    }
    /* What was queued may be a tenant's job or result: leave none of it in memory a zygote's
     * next children inherit (scrub.h). */
    explicit_bzero(self->out.data, self->out.len);
    buf_reset(&self->out);
    self->out_off = 0;
    return 0;
}

int zchan_read(zchan_t *self, zchan_msg_fn *fn, void *arg)
{
    for (;;) {
        ssize_t n = recv(self->fd, self->dgram, sizeof self->dgram, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            return -1;
        }
        if (n == 0) return -1; /* peer closed */
        const uint8_t *p = self->dgram;
        size_t         len = (size_t)n;
        /* every datagram's bytes are zeroed once copied (scrub.h), not the whole 64 KiB
         * buffer: that was ~2/3 of the node's instructions per job */
        if (!self->assembling) {
            uint32_t total = 0;
            if (len >= HDR_LEN) memcpy(&total, p + 4, 4);
            if (len < HDR_LEN || total > ZCHAN_MAX_MSG || len - HDR_LEN > total) {
                explicit_bzero(self->dgram, (size_t)n);
                return -1;
            }
            self->in_type = p[0];
            memcpy(self->in_id, p + 8, ID_BYTES);
            self->in_len = total;
            self->in_have = 0;
            free(self->in_data);
            self->in_data = xmalloc(total ? total : 1);
            self->assembling = 1;
            p += HDR_LEN;
            len -= HDR_LEN;
        }
        if (len > self->in_len - self->in_have) {
            explicit_bzero(self->dgram, (size_t)n);
            return -1;
        }
        memcpy(self->in_data + self->in_have, p, len);
        explicit_bzero(self->dgram, (size_t)n);
        self->in_have += len;
        if (self->in_have == self->in_len) {
            self->assembling = 0;
            fn(arg, self->in_type, self->in_id, self->in_data, self->in_len);
            explicit_bzero(self->in_data, self->in_len); /* scrub.h */
        }
    }
}
