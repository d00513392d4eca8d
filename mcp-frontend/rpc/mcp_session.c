/* mcp-frontend/rpc/mcp_session.c — see mcp_session.h. Copies are found by their Mcp-Session-Id in a
 * chained hash table; ids are 128 random bits in hex, so one tenant cannot guess another's
 * (MCP 2025-11-25 transports §"Session Management": ids must be globally unique and
 * cryptographically secure). A sweep forgets copies nobody has used for a while. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp_session.h"

#define SESSION_BUCKETS 4096
#define FORGET_IDLE_MS  60000 /* a copy unused this long is dropped (its session stays in Redis) */
#define SWEEP_MS        10000

struct mcp_sessions {
    loop_t *loop;
    mcp_sessions_conf_t conf;
    mcp_session_end_calls_fn *end_calls; /* the owner's hook: cancel a closing session's calls */
    mcp_session_notify_fn *notify;       /* where HTTP sessions' notifications go */
    void *notify_ctx;
    mcp_session_keeper_t keeper; /* where they are kept beyond this process (legacy/) */
    mcp_session_t *buckets[SESSION_BUCKETS];
    size_t n;
    mcp_sessions_stats_t stats;
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

static void s_unlink(mcp_sessions_t *self, mcp_session_t *s)
{
    for (mcp_session_t **pp = &self->buckets[s_hash(s->id)]; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            self->n--;
            s->tenant->sessions--;
            self->stats.open[s->transport]--;
            s->table = NULL;
            return;
        }
}

static void s_link(mcp_sessions_t *self, mcp_session_t *s)
{
    unsigned h = s_hash(s->id);
    s->table = self;
    s->next = self->buckets[h];
    self->buckets[h] = s;
    self->n++;
    s->tenant->sessions++;
    self->stats.open[s->transport]++;
}

/* A copy nobody uses: dropped from memory, not ended (another front-end may be serving it). */
static void s_forget(mcp_session_t *s)
{
    mcp_sessions_t *self = s->table;
    s_unlink(self, s);
    self->stats.forgotten++;
    mcp_session_release(s); /* the table's */
}

static int s_idle(const mcp_session_t *s, uint64_t now, uint64_t after_ms)
{
    return s->stored && !s->n_calls && now - s->last_used_ms > after_ms;
}

static void s_on_sweep(loop_t *loop, void *arg)
{
    (void)loop;
    mcp_sessions_t *self = arg;
    uint64_t now = clock_mono_ms();
    /* over the cap, copies go sooner: unused for a second rather than a minute */
    uint64_t after = (long)self->n > self->conf.max_sessions ? 1000 : FORGET_IDLE_MS;
    for (unsigned b = 0; b < SESSION_BUCKETS; b++)
        for (mcp_session_t *s = self->buckets[b], *next; s; s = next) {
            next = s->next;
            if (s_idle(s, now, after)) s_forget(s);
        }
}

mcp_sessions_t *mcp_sessions_new(loop_t *loop, const mcp_sessions_conf_t *conf,
                                 mcp_session_end_calls_fn *end_calls)
{
    mcp_sessions_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->conf = *conf;
    self->end_calls = end_calls;
    self->sweep_timer = loop_timer_add(loop, SWEEP_MS, SWEEP_MS, s_on_sweep, self);
    return self;
}

void mcp_sessions_destroy(mcp_sessions_t **self_p)
{
    mcp_sessions_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->sweep_timer);
    for (unsigned b = 0; b < SESSION_BUCKETS; b++)
        while (self->buckets[b]) mcp_session_close(self->buckets[b]);
    free(self);
    *self_p = NULL;
}

const mcp_sessions_conf_t *mcp_sessions_conf(const mcp_sessions_t *self)
{
    return &self->conf;
}

void mcp_sessions_on_notify(mcp_sessions_t *self, mcp_session_notify_fn *fn, void *ctx)
{
    self->notify = fn;
    self->notify_ctx = ctx;
}

void mcp_sessions_kept_by(mcp_sessions_t *self, const mcp_session_keeper_t *keeper)
{
    self->keeper = *keeper;
}

static const mcp_session_keeper_t *s_keeper(const mcp_session_t *s)
{
    assert(s->table && s->table->keeper.keep); /* a table's session, kept by legacy/ */
    return &s->table->keeper;
}

void mcp_session_keep(mcp_session_t *s, mcp_session_done_fn *done, void *arg)
{
    const mcp_session_keeper_t *k = s_keeper(s);
    k->keep(k->self, s, done, arg);
}

void mcp_session_set_level(mcp_session_t *s, int level, mcp_session_done_fn *done, void *arg)
{
    const mcp_session_keeper_t *k = s_keeper(s);
    k->set_level(k->self, s, level, done, arg);
}

void mcp_session_subscribe(mcp_session_t *s, const char *uri, int on, mcp_session_done_fn *done,
                           void *arg)
{
    const mcp_session_keeper_t *k = s_keeper(s);
    k->subscribe(k->self, s, uri, on, done, arg);
}

void mcp_session_cancel_elsewhere(mcp_session_t *s, const json_t *request_id, const char *reason)
{
    const mcp_session_keeper_t *k = s_keeper(s);
    k->cancel_elsewhere(k->self, s, request_id, reason);
}

void mcp_sessions_resource_updated(mcp_sessions_t *self, const char *tenant, const char *uri)
{
    if (self->keeper.resource_updated)
        self->keeper.resource_updated(self->keeper.self, tenant, uri);
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

static mcp_session_t *s_alloc(tenant_t *tenant, transport_t transport)
{
    mcp_session_t *s = xcalloc(1, sizeof *s);
    s->transport = transport;
    s->tenant = tenant;
    s->log_level = LOGLEVEL_NONE;
    s->subscriptions = json_object();
    s->last_used_ms = clock_mono_ms();
    s->refs = 1;
    return s;
}

mcp_session_t *mcp_session_new(mcp_sessions_t *self, transport_t transport, tenant_t *tenant)
{
    mcp_session_t *s = s_alloc(tenant, transport);
    if (transport == TRANSPORT_STDIO) {
        snprintf(s->id, sizeof s->id, "stdio");
    } else if (s_random_id(s->id) < 0) {
        log_error("event=session_id_failed error=getrandom");
        json_decref(s->subscriptions);
        free(s);
        return NULL;
    } else {
        s->notify = self->notify;
        s->notify_ctx = self->notify_ctx;
    }
    s_link(self, s); /* the table holds the first reference */
    self->stats.opened[transport]++;
    return s;
}

mcp_session_t *mcp_session_find(mcp_sessions_t *self, const char *id)
{
    if (!id) return NULL;
    for (mcp_session_t *s = self->buckets[s_hash(id)]; s; s = s->next)
        if (strcmp(s->id, id) == 0) return s->closed ? NULL : s;
    return NULL;
}

static long s_field_long(const json_t *fields, const char *name, long dflt)
{
    const char *v = json_string_value(json_object_get(fields, name));
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void s_field_str(const json_t *fields, const char *name, char *out, size_t cap)
{
    const char *v = json_string_value(json_object_get(fields, name));
    snprintf(out, cap, "%s", v ? v : "");
}

mcp_session_t *mcp_session_restore(mcp_sessions_t *self, tenant_t *tenant, const char *id,
                                   const json_t *fields)
{
    mcp_session_t *s = mcp_session_find(self, id);
    if (s && s->tenant != tenant) return NULL; /* another tenant's id: as unknown as any */
    if (!s) {
        s = s_alloc(tenant, TRANSPORT_HTTP);
        snprintf(s->id, sizeof s->id, "%s", id);
        s->notify = self->notify;
        s->notify_ctx = self->notify_ctx;
        s->initialized = 1; /* it was, wherever initialize ran */
        s_link(self, s);
        self->stats.restored++;
    }
    s_field_str(fields, "proto", s->protocol, sizeof s->protocol);
    s_field_str(fields, "client", s->client_name, sizeof s->client_name);
    s_field_str(fields, "ep", s->endpoint, sizeof s->endpoint); /* absent: /mcp */
    s->client_tasks = (int)s_field_long(fields, "tasks", 0);
    long level = s_field_long(fields, "level", LOGLEVEL_NONE);
    s->log_level = level >= 0 && level <= LOGLEVEL_NONE ? (int)level : LOGLEVEL_NONE;
    s->stored = 1;
    s->fresh_until_ms = clock_mono_ms() + (uint64_t)self->conf.cache_ms;
    return s;
}

int mcp_session_fresh(const mcp_session_t *s)
{
    return !s->stored || clock_mono_ms() < s->fresh_until_ms;
}

void mcp_sessions_stale(mcp_sessions_t *self)
{
    for (unsigned b = 0; b < SESSION_BUCKETS; b++)
        for (mcp_session_t *s = self->buckets[b]; s; s = s->next) s->fresh_until_ms = 0;
}

mcp_session_t *mcp_session_scope(tenant_t *tenant, transport_t transport)
{
    return s_alloc(tenant, transport);
}

void mcp_session_close(mcp_session_t *s)
{
    if (s->closed) return;
    s->closed = 1;
    mcp_sessions_t *table = s->table;
    if (table) s_unlink(table, s);
    s->notify = NULL;
    s->notify_ctx = NULL;
    /* in-flight calls are cancelled: their answers have nowhere to go */
    mcp_session_hold(s);
    if (s->calls && table) table->end_calls(s, "session ended");
    mcp_session_release(s);
    if (table) mcp_session_release(s); /* the table's */
}

void mcp_session_hold(mcp_session_t *s)
{
    s->refs++;
}

void mcp_session_release(mcp_session_t *s)
{
    assert(s->refs > 0);
    if (--s->refs > 0) return;
    json_decref(s->subscriptions);
    free(s);
}

size_t mcp_sessions_count(const mcp_sessions_t *self)
{
    return self->n;
}

const mcp_sessions_stats_t *mcp_sessions_stats(const mcp_sessions_t *self)
{
    return &self->stats;
}

void mcp_session_key(char *out, size_t cap, const char *tenant, const char *id)
{
    snprintf(out, cap, "sp:t:{%s}:sess:%s", tenant, id);
}

void mcp_session_notify(mcp_session_t *s, json_t *msg)
{
    if (s->notify && !s->closed) s->notify(s->notify_ctx, s, msg);
    json_decref(msg);
}
