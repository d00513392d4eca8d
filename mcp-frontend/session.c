/* mcp-frontend/session.c — see session.h. Sessions are found by their Mcp-Session-Id in a
 * chained hash table; ids are 128 random bits in hex, so one tenant cannot guess another's
 * (MCP 2025-11-25 transports §"Session Management": ids must be globally unique and
 * cryptographically secure). Idle sessions are closed by a sweep. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "session.h"

#define SESSION_BUCKETS 4096

struct sessions {
    loop_t *loop;
    sessions_conf_t conf;
    session_end_calls_fn *end_calls; /* the owner's hook: cancel a closing session's calls */
    session_t *buckets[SESSION_BUCKETS];
    size_t n;
    sessions_stats_t stats;
    uint64_t sweep_timer;
};

static unsigned s_hash(const char *id)
{
    unsigned h = 2166136261u; /* FNV-1a: ids are random already, this only spreads them */
    for (const char *p = id; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h % SESSION_BUCKETS;
}

const char *transport_name(transport_t t)
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
            self->stats.open[s->transport]--;
            return;
        }
}

static void s_on_sweep(loop_t *loop, void *arg)
{
    (void)loop;
    sessions_t *self = arg;
    uint64_t now = clock_mono_ms();
    uint64_t idle = (uint64_t)self->conf.idle_s * 1000;
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

sessions_t *sessions_new(loop_t *loop, const sessions_conf_t *conf, session_end_calls_fn *end_calls)
{
    sessions_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->conf = *conf;
    self->end_calls = end_calls;
    self->sweep_timer = loop_timer_add(loop, 10000, 10000, s_on_sweep, self);
    return self;
}

void sessions_destroy(sessions_t **self_p)
{
    sessions_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->sweep_timer);
    for (unsigned b = 0; b < SESSION_BUCKETS; b++)
        while (self->buckets[b]) session_close(self->buckets[b]);
    free(self);
    *self_p = NULL;
}

/* 32 hex digits from getrandom; -1 when the kernel cannot give them (never expected after boot;
 * ids must stay unguessable, so the caller refuses rather than making a weaker one). */
static int s_random_id(char id[40])
{
    uint8_t r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) return -1;
    for (int i = 0; i < 16; i++) snprintf(id + 2 * i, 3, "%02x", r[i]);
    return 0;
}

session_t *session_new(sessions_t *self, transport_t transport, tenant_t *tenant)
{
    session_t *s = xcalloc(1, sizeof *s);
    if (transport == TRANSPORT_STDIO) {
        snprintf(s->id, sizeof s->id, "stdio");
    } else if (s_random_id(s->id) < 0) {
        log_error("event=session_id_failed error=getrandom");
        free(s);
        return NULL;
    }
    s->table = self;
    s->transport = transport;
    s->tenant = tenant;
    s->log_level = LOGLEVEL_NONE;
    s->subscriptions = json_object();
    s->last_used_ms = clock_mono_ms();
    s->refs = 1; /* the table's */
    unsigned h = s_hash(s->id);
    s->next = self->buckets[h];
    self->buckets[h] = s;
    self->n++;
    tenant->sessions++;
    self->stats.open[transport]++;
    self->stats.opened[transport]++;
    return s;
}

session_t *session_scope(tenant_t *tenant, transport_t transport)
{
    session_t *s = xcalloc(1, sizeof *s);
    s->transport = transport;
    s->tenant = tenant;
    s->log_level = LOGLEVEL_NONE;
    s->subscriptions = json_object();
    s->last_used_ms = clock_mono_ms();
    s->refs = 1; /* the caller's */
    return s;
}

session_t *session_find(sessions_t *self, const char *id)
{
    if (!id) return NULL;
    for (session_t *s = self->buckets[s_hash(id)]; s; s = s->next)
        if (strcmp(s->id, id) == 0) return s;
    return NULL;
}

int sessions_full(const sessions_t *self, const tenant_t *tenant)
{
    return (long)self->n >= self->conf.max_sessions ||
           tenant->sessions >= self->conf.max_per_tenant;
}

void session_close(session_t *s)
{
    if (s->closed) return;
    s->closed = 1;
    s_unlink(s->table, s);
    if (s->notify && s->notify_end) s->notify_end(s->notify_ctx);
    s->notify = NULL;
    s->notify_ctx = NULL;
    /* in-flight calls are cancelled: their answers have nowhere to go */
    session_hold(s);
    if (s->calls) s->table->end_calls(s, "session ended");
    session_release(s);
    session_release(s); /* the table's */
}

void session_hold(session_t *s)
{
    s->refs++;
}

void session_release(session_t *s)
{
    assert(s->refs > 0);
    if (--s->refs > 0) return;
    json_decref(s->subscriptions);
    free(s);
}

size_t sessions_count(const sessions_t *self)
{
    return self->n;
}

const sessions_stats_t *sessions_stats(const sessions_t *self)
{
    return &self->stats;
}

void session_notify(session_t *s, json_t *msg)
{
    if (s->notify && !s->closed) s->notify(s->notify_ctx, s, msg);
    json_decref(msg);
}
