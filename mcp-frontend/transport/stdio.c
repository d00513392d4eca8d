/* mcp-frontend/transport/stdio.c — see stdio.h. Both ends are non-blocking and on the loop: a
 * client that stops reading stdout cannot stall the loop; output waits in a buffer instead (and a
 * client that never reads is the client's problem, bounded by its own pipe).
 *
 * The answer of a call that sent progress waits until the client has read that progress. A
 * client may well handle a notification later than a response that came in the same read: the
 * official TypeScript SDK dispatches notifications on a microtask but responses at once, and
 * forgets a request's progress handler with its response, so a last "done" notification that
 * shares a read with the result is dropped as one for an unknown token. Nothing in the protocol
 * acknowledges a notification, but the kernel says when the client has taken what was written:
 * the bytes still in the pipe (FIONREAD) or not yet read from the socket (SIOCOUTQ). So such an
 * answer, and everything after it, waits until that is 0 — checked every millisecond, for at
 * most HOLD_MAX_MS, after which it goes anyway (a client that does not read at all). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/state/tenants.h"
#include "stdio.h"

#define EOF_GRACE_MS 3000
#define HOLD_MAX_MS  250 /* an answer waits at most this long for its progress to be read */

struct stdio_tx {
    fe_t *fe;
    long max_line;
    const endpoint_t *endpoint; /* --compat's, or NULL */
    mcp_session_t *session;
    buf_t in;       /* bytes read, not yet a whole line */
    int discarding; /* the current line passed --max-body: skip to its end */
    buf_t out;      /* bytes not yet written */
    size_t out_off;
    int writing; /* POLLOUT watched on stdout */
    int eof;
    int exiting; /* the loop was stopped for good */
    uint64_t grace_timer;
    unsigned long unread_request; /* FIONREAD (a pipe), SIOCOUTQ (a socket), 0: cannot tell */
    buf_t held;                   /* an answer that waits for its progress to be read, and after */
    uint64_t hold_timer;
    uint64_t hold_until_ms;
};

static void s_flush(stdio_tx_t *self);

static void s_on_writable(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    s_flush(arg);
}

static void s_flush(stdio_tx_t *self)
{
    while (self->out_off < self->out.len) {
        ssize_t n = write(1, self->out.data + self->out_off, self->out.len - self->out_off);
        if (n > 0) {
            self->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            if (!self->writing) loop_add_fd(self->fe->loop, 1, ZMQ_POLLOUT, s_on_writable, self);
            self->writing = 1;
            return;
        }
        log_warn("event=stdout_write_failed error=\"%s\"", strerror(errno));
        buf_reset(&self->out);
        self->out_off = 0;
        loop_stop(self->fe->loop);
        return;
    }
    buf_reset(&self->out);
    self->out_off = 0;
    if (self->writing) loop_remove_fd(self->fe->loop, 1);
    self->writing = 0;
}

/* Bytes written that the client has not read yet (what the kernel holds for it). */
static long s_unread(stdio_tx_t *self)
{
    int n = 0;
    if (!self->unread_request || ioctl(1, self->unread_request, &n) < 0) return 0;
    return n;
}

static void s_release_held(stdio_tx_t *self)
{
    if (self->hold_timer) loop_timer_cancel(self->fe->loop, self->hold_timer);
    self->hold_timer = 0;
    if (self->held.len) buf_append(&self->out, self->held.data, self->held.len);
    buf_reset(&self->held);
    s_flush(self);
}

static void s_on_hold_tick(loop_t *loop, void *arg)
{
    (void)loop;
    stdio_tx_t *self = arg;
    if ((self->out_off >= self->out.len && s_unread(self) == 0) ||
        clock_mono_ms() >= self->hold_until_ms)
        s_release_held(self);
}

static void s_send(stdio_tx_t *self, const json_t *msg, int hold)
{
    size_t len;
    char *text = rpc_dump(msg, &len);
    /* held: this answer (and whatever follows it) waits for what went before to be read */
    if (!self->held.len && hold && self->unread_request &&
        (self->out_off < self->out.len || s_unread(self) > 0)) {
        self->hold_until_ms = clock_mono_ms() + HOLD_MAX_MS;
        self->hold_timer = loop_timer_add(self->fe->loop, 1, 1, s_on_hold_tick, self);
    }
    buf_t *to = self->hold_timer ? &self->held : &self->out;
    buf_append(to, text, len);
    buf_append(to, "\n", 1);
    free(text);
    if (to == &self->out) s_flush(self);
}

/* Once: this runs before every poll (s_prepare), and main.c turns the loop again after it
 * stops to let the store's writes land. Stopping it at each turn would keep it from ever
 * polling: the drain spun for its whole budget and the records it waited for were lost. */
static void s_maybe_exit(stdio_tx_t *self)
{
    if (self->eof && self->session->n_calls == 0 && !self->exiting) {
        self->exiting = 1;
        s_release_held(self);
        loop_stop(self->fe->loop);
    }
}

static void s_emit(void *ctx, call_t *call, json_t *msg, int final)
{
    stdio_tx_t *self = ctx;
    if (msg) s_send(self, msg, final && call && call->progress_token && call->progress > 0);
}

static void s_notify(void *ctx, mcp_session_t *s, json_t *msg)
{
    (void)s;
    s_send(ctx, msg, 0);
}

static void s_line(stdio_tx_t *self, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    size_t skip = 0;
    while (skip < len && (line[skip] == ' ' || line[skip] == '\t')) skip++;
    if (skip == len) return; /* blank lines are not messages */
    rpc_msg_t m;
    if (rpc_parse(line + skip, len - skip, &m) < 0) {
        mcp_reject(self->fe->mcp, &m, "stdio", s_emit, self);
        rpc_msg_clear(&m);
        return;
    }
    /* both eras on one process (basic/versioning: a dual-era server MAY serve them
     * concurrently): a message with a modern envelope is served on its own, anything else in
     * the process's legacy session, which initialize opens */
    admission_t a;
    switch (admit_message(mcp_admit_stats(self->fe->mcp), &m, NULL, "stdio", &a)) {
    case ADMIT_REFUSED:
        mcp_refused(self->fe->mcp);
        s_send(self, a.error, 0);
        json_decref(a.error);
        break;
    case ADMIT_MODERN:
        mcp_handle(self->fe->mcp, self->session, &m, &a.env, self->endpoint, s_emit, self);
        break;
    default:
        mcp_handle(self->fe->mcp, self->session, &m, NULL, self->endpoint, s_emit, self);
        break;
    }
    rpc_msg_clear(&m);
}

static void s_too_long(stdio_tx_t *self)
{
    rpc_msg_t m = {.kind = RPC_INVALID, .code = RPC_INVALID_REQUEST};
    snprintf(m.why, sizeof m.why, "message longer than the limit of %ld bytes", self->max_line);
    mcp_reject(self->fe->mcp, &m, "stdio", s_emit, self);
}

/* No client is left to hear a subscriptions/listen stream (and nothing would ever end it). */
static void s_end_listens(stdio_tx_t *self)
{
    for (call_t *c = self->session->calls, *next; c; c = next) {
        next = c->next;
        if (!strcmp(c->method, "subscriptions/listen")) call_cancel(c, "stdin closed");
    }
}

static void s_on_grace(loop_t *loop, void *arg)
{
    (void)arg;
    log_info("event=stdio_exit reason=eof_grace_passed");
    loop_stop(loop);
}

static void s_on_readable(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    stdio_tx_t *self = arg;
    char chunk[65536];
    ssize_t n = read(0, chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        if (self->in.len && !self->discarding)
            s_line(self, (const char *)self->in.data, self->in.len);
        loop_remove_fd(loop, 0);
        self->eof = 1;
        s_end_listens(self);
        log_info("event=stdio_eof calls_in_flight=%ld", self->session->n_calls);
        self->grace_timer = loop_timer_add(loop, EOF_GRACE_MS, 0, s_on_grace, self);
        s_maybe_exit(self);
        return;
    }
    const char *p = chunk, *end = chunk + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!self->discarding) {
            if (self->in.len + take > (size_t)self->max_line) {
                self->discarding = 1;
                buf_reset(&self->in);
                s_too_long(self);
            } else {
                buf_append(&self->in, p, take);
            }
        }
        if (!nl) break;
        if (!self->discarding) s_line(self, (const char *)self->in.data, self->in.len);
        buf_reset(&self->in);
        self->discarding = 0;
        p = nl + 1;
    }
    s_maybe_exit(self);
}

/* Called after every loop turn's work: an EOF'd transport exits once all calls answered. */
static long s_prepare(loop_t *loop, void *arg)
{
    (void)loop;
    s_maybe_exit(arg);
    return -1;
}

int stdio_start(fe_t *fe, const char *tenant, long max_line, const endpoint_t *ep)
{
    stdio_tx_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->max_line = max_line;
    self->endpoint = ep;
    buf_init(&self->in);
    buf_init(&self->out);
    buf_init(&self->held);
    struct stat st;
    if (fstat(1, &st) == 0)
        self->unread_request = S_ISFIFO(st.st_mode)   ? FIONREAD
                               : S_ISSOCK(st.st_mode) ? SIOCOUTQ
                                                      : 0;
    for (int fd = 0; fd <= 1; fd++) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            log_error("event=stdio_failed fd=%d error=\"%s\"", fd, strerror(errno));
            free(self);
            return -1;
        }
    }
    self->session =
        mcp_session_new(fe->mcp_sessions, TRANSPORT_STDIO, tenants_named(fe->tenants, tenant));
    snprintf(self->session->endpoint, sizeof self->session->endpoint, "%s", ep ? ep->name : "");
    self->session->notify = s_notify;
    self->session->notify_ctx = self;
    fe->stdio = self;
    loop_add_fd(fe->loop, 0, ZMQ_POLLIN, s_on_readable, self);
    loop_on_prepare(fe->loop, s_prepare, self);
    log_info("event=stdio_ready tenant=%s endpoint=%s", tenant, ep ? ep->name : "mcp");
    return 0;
}

void stdio_stop(fe_t *fe)
{
    stdio_tx_t *self = fe->stdio;
    if (!self) return;
    s_release_held(self);
    if (self->writing) loop_remove_fd(fe->loop, 1);
    self->session->notify = NULL;
    mcp_session_close(self->session);
    buf_free(&self->in);
    buf_free(&self->out);
    buf_free(&self->held);
    free(self);
    fe->stdio = NULL;
}
