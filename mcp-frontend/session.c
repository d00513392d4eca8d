/* mcp-frontend/session.c — the session table (see mcp.h). Sessions are found by their
 * Mcp-Session-Id in a chained hash table; ids are 128 random bits in hex, so one tenant
 * cannot guess another's (MCP 2025-11-25 transports §"Session Management": ids must be
 * globally unique and cryptographically secure). Idle sessions are closed by a sweep. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "metrics.h"
#include "mcp.h"

#define SESSION_BUCKETS 4096

struct sessions {
    fe_t *fe;
    session_t *buckets[SESSION_BUCKETS];
    size_t n;
    uint64_t sweep_timer;
};

static unsigned s_hash(const char *id)
{
    unsigned h = 2166136261u; /* FNV-1a: ids are random already, this only spreads them */
    for (const char *p = id; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h % SESSION_BUCKETS;
}

static const char *s_transport_name(transport_t t)
{
    return t == TRANSPORT_HTTP ? "http" : "stdio";
}

static void s_unlink(sessions_t *self, session_t *s)
{
    for (session_t **pp = &self->buckets[s_hash(s->id)]; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            self->n--;
            s->tenant->sessions--;
            metric_add(M.sessions, -1, s_transport_name(s->transport), NULL);
            return;
        }
}

static void s_on_sweep(loop_t *loop, void *arg)
{
    (void)loop;
    sessions_t *self = arg;
    uint64_t now = clock_mono_ms();
    uint64_t idle = (uint64_t)self->fe->conf.session_idle_s * 1000;
    for (unsigned b = 0; b < SESSION_BUCKETS; b++) {
        session_t *s = self->buckets[b];
        while (s) {
            session_t *next = s->next;
            /* a session with work in flight or an open GET stream is not idle */
            if (s->transport == TRANSPORT_HTTP && !s->n_calls && !s->notify &&
                now - s->last_used_ms > idle) {
                log_info("event=session_expired session=%.8s tenant=%s", s->id, s->tenant->name);
                session_close(s);
            }
            s = next;
        }
    }
}

sessions_t *sessions_new(fe_t *fe)
{
    sessions_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->sweep_timer = loop_timer_add(fe->loop, 10000, 10000, s_on_sweep, self);
    return self;
}

void sessions_destroy(sessions_t **self_p)
{
    sessions_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->fe->loop, self->sweep_timer);
    for (unsigned b = 0; b < SESSION_BUCKETS; b++)
        while (self->buckets[b]) session_close(self->buckets[b]);
    free(self);
    *self_p = NULL;
}

session_t *session_new(fe_t *fe, transport_t transport, tenant_t *tenant)
{
    sessions_t *self = fe->sessions;
    session_t *s = xcalloc(1, sizeof *s);
    s->fe = fe;
    s->transport = transport;
    s->tenant = tenant;
    s->log_level = LOGLEVEL_NONE;
    s->subscriptions = json_object();
    s->last_used_ms = clock_mono_ms();
    s->refs = 1; /* the table's */
    if (transport == TRANSPORT_STDIO) {
        snprintf(s->id, sizeof s->id, "stdio");
    } else {
        uint8_t r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            /* never expected after boot; ids must stay unguessable, so refuse */
            log_error("event=session_id_failed error=getrandom");
            json_decref(s->subscriptions);
            free(s);
            return NULL;
        }
        for (int i = 0; i < 16; i++) snprintf(s->id + 2 * i, 3, "%02x", r[i]);
    }
    unsigned h = s_hash(s->id);
    s->next = self->buckets[h];
    self->buckets[h] = s;
    self->n++;
    tenant->sessions++;
    metric_add(M.sessions, 1, s_transport_name(transport), NULL);
    metric_inc(M.sessions_opened, s_transport_name(transport), NULL);
    return s;
}

session_t *session_find(fe_t *fe, const char *id)
{
    if (!id) return NULL;
    for (session_t *s = fe->sessions->buckets[s_hash(id)]; s; s = s->next)
        if (strcmp(s->id, id) == 0) return s;
    return NULL;
}

void session_close(session_t *s)
{
    if (s->closed) return;
    s->closed = 1;
    s_unlink(s->fe->sessions, s);
    if (s->notify && s->notify_end) s->notify_end(s->notify_ctx);
    s->notify = NULL;
    s->notify_ctx = NULL;
    /* in-flight calls are cancelled: their answers have nowhere to go */
    session_hold(s);
    call_t *c = s->calls;
    while (c) {
        call_t *next = c->next;
        call_detach(c);
        call_cancel(c, "session ended");
        c = next;
    }
    session_release(s);
    session_release(s);
}

void session_hold(session_t *s)
{
    s->refs++;
}

void session_release(session_t *s)
{
    if (--s->refs > 0) return;
    json_decref(s->subscriptions);
    free(s);
}

size_t sessions_count(fe_t *fe)
{
    return fe->sessions->n;
}

void session_notify(session_t *s, json_t *msg)
{
    if (s->notify && !s->closed) s->notify(s->notify_ctx, s, msg);
    json_decref(msg);
}
