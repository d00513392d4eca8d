/* mcp-frontend/legacy/stream_log.c — see stream_log.h. A follower asks Redis, in one script, to
 * route the stream's next events to this front-end's inbox and for what the log holds after the
 * client's last event; events that reach the inbox before that replay has been written out wait,
 * and anything not newer than what was written is dropped, so the client sees each event once and
 * in order. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "stream_log.h"

#define REFRESH_MS 60000 /* followers renew their claim on a stream this often */

/* KEYS: the log. ARGV: id, message, final, ttl. */
static const char s_append_lua[] =
    STREAM_LOG_LUA_APPEND "return append(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])\n";

/* KEYS: the log. ARGV: inbox, after ("": from now on), ttl. The replay, or nil when the log is
 * gone (or never was). */
static const char s_follow_lua[] = "redis.call('SET', KEYS[1] .. ':fw', ARGV[1], 'PX', ARGV[3])\n"
                                   "if ARGV[2] == '' then return {} end\n"
                                   "if redis.call('EXISTS', KEYS[1]) == 0 then return false end\n"
                                   "return redis.call('XRANGE', KEYS[1], '(' .. ARGV[2], '+')\n";

/* KEYS: the log. ARGV: inbox. Lets go of the stream, unless another follower has it. */
static const char s_unfollow_lua[] =
    "if redis.call('GET', KEYS[1] .. ':fw') == ARGV[1] then redis.call('DEL', KEYS[1] .. ':fw') "
    "end\nreturn 1\n";

typedef struct {
    uint64_t ms, seq;
} evid_t;

typedef struct pending {
    evid_t id;
    char *sse_id;
    json_t *msg;
    int final;
    struct pending *next;
} pending_t;

struct stream_follower {
    stream_log_t *log;
    mcp_session_t *session; /* held */
    char key[256];          /* the stream's log */
    char tag[16];           /* "g", or a POST stream's */
    uint64_t token;         /* tells this GET stream from a newer one of the same session */
    evid_t last;            /* the newest event written out */
    int replaying;          /* Redis has not answered the follow yet: inbox events wait */
    pending_t *pending, **pending_tail;
    int ended;
    stream_follower_event_fn *event;
    stream_follower_end_fn *end;
    void *ctx;
    stream_follower_t *next, **prev;
};

struct logged_stream {
    stream_log_t *log;
    char key[256];
    char tag[16];
    uint64_t n;
    char sse_id[64];
};

struct stream_log {
    store_t **store_p; /* &fe->store: NULL once the store is gone (shutdown) */
    bus_t *bus;
    mcp_sessions_t *sessions;
    stream_log_conf_t conf;
    store_script_t *append, *follow, *unfollow;
    stream_follower_t *followers;
    uint64_t next_token;
    uint64_t timer;
    loop_t *loop;
    stream_log_stats_t stats;
};

static int s_parse_evid(const char *s, evid_t *id)
{
    char *end;
    id->ms = strtoull(s, &end, 10);
    if (end == s || *end != '-') return -1;
    const char *q = end + 1;
    id->seq = strtoull(q, &end, 10);
    return end == q || *end ? -1 : 0;
}

static int s_after(evid_t a, evid_t b)
{
    return a.ms > b.ms || (a.ms == b.ms && a.seq > b.seq);
}

long stream_log_replay_ms(const stream_log_t *self)
{
    return self->conf.replay_s * 1000;
}

static void s_log_key(char *out, size_t cap, const mcp_session_t *s, const char *tag)
{
    char base[200];
    mcp_session_key(base, sizeof base, s->tenant->name, s->id);
    snprintf(out, cap, "%s:ev:%s", base, tag);
}

static void s_append(stream_log_t *self, const char *key, const char *id, const json_t *msg,
                     int final)
{
    char *text = json_text(msg, JSON_COMPACT);
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%ld", stream_log_replay_ms(self));
    const char *args[] = {key, id, text ? text : "{}", final ? "1" : "0", ttl};
    self->stats.appended++;
    store_eval(*self->store_p, self->append, NULL, NULL, 1, 5, args); /* lost when Redis is away */
    free(text);
}

/* ---- writing */

logged_stream_t *logged_stream_new(stream_log_t *self, const mcp_session_t *s)
{
    logged_stream_t *st = xcalloc(1, sizeof *st);
    st->log = self;
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint32_t)clock_mono_us();
    snprintf(st->tag, sizeof st->tag, "%08x", r);
    s_log_key(st->key, sizeof st->key, s, st->tag);
    return st;
}

const char *logged_stream_append(logged_stream_t *st, const json_t *msg, int final)
{
    char id[32];
    snprintf(id, sizeof id, "0-%" PRIu64, ++st->n); /* one writer: it numbers the events */
    s_append(st->log, st->key, id, msg, final);
    snprintf(st->sse_id, sizeof st->sse_id, "%s.%s", st->tag, id);
    return st->sse_id;
}

void logged_stream_free(logged_stream_t **st_p)
{
    free(*st_p);
    *st_p = NULL;
}

void logged_stream_emit(void *ctx, call_t *call, json_t *msg, int final)
{
    (void)call;
    logged_stream_t *st = ctx;
    if (msg) logged_stream_append(st, msg, final);
    if (final) logged_stream_free(&st);
}

/* Messages not tied to a request, for an HTTP session: its GET stream's log, numbered by Redis
 * (any front-end may write it), and whoever follows the stream writes them out. */
static void s_session_notify(void *ctx, mcp_session_t *s, json_t *msg)
{
    stream_log_t *self = ctx;
    char key[256];
    s_log_key(key, sizeof key, s, "g");
    s_append(self, key, "*", msg, 0);
}

/* ---- following */

static void s_deliver(stream_follower_t *f, evid_t id, const char *sse_id, const json_t *msg,
                      int final)
{
    if (f->ended || !s_after(id, f->last)) return; /* already written out */
    f->last = id;
    f->event(f->ctx, sse_id, msg, final);
    if (final) f->ended = 1;
}

static void s_end(stream_follower_t *f)
{
    if (f->ended == 2) return;
    f->ended = 2;
    if (f->end) f->end(f->ctx);
}

static void s_flush_pending(stream_follower_t *f)
{
    while (f->pending) {
        pending_t *p = f->pending;
        f->pending = p->next;
        s_deliver(f, p->id, p->sse_id, p->msg, p->final);
        free(p->sse_id);
        json_decref(p->msg);
        free(p);
    }
    f->pending_tail = &f->pending;
}

static void s_on_replay(void *arg, redisReply *r)
{
    stream_follower_t *f = arg;
    if (!f->log) { /* stopped before Redis answered */
        free(f);
        return;
    }
    stream_log_t *self = f->log;
    f->replaying = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY) { /* nil: no such log; else Redis failed */
        if (r && r->type == REDIS_REPLY_NIL) self->stats.unknown++;
        f->ended = 1;
        s_end(f);
        return;
    }
    for (size_t i = 0; i < r->elements && !f->ended; i++) {
        const redisReply *e = r->element[i];
        evid_t id;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
            s_parse_evid(e->element[0]->str, &id) < 0)
            continue;
        const redisReply *kv = e->element[1];
        json_t *msg = NULL;
        int final = 0;
        for (size_t k = 0; k + 1 < kv->elements; k += 2) {
            if (!strcmp(kv->element[k]->str, "m"))
                msg = json_loadb(kv->element[k + 1]->str, kv->element[k + 1]->len, 0, NULL);
            else if (!strcmp(kv->element[k]->str, "f"))
                final = kv->element[k + 1]->str[0] == '1';
        }
        if (msg) {
            char sse_id[96];
            snprintf(sse_id, sizeof sse_id, "%s.%s", f->tag, e->element[0]->str);
            self->stats.replayed++;
            s_deliver(f, id, sse_id, msg, final);
            json_decref(msg);
        }
    }
    s_flush_pending(f);
    if (f->ended) s_end(f);
}

/* "<tag>.<ms>-<seq>" → tag and the id after which to replay. */
static int s_parse_last(const char *last, char *tag, size_t tagcap, evid_t *after, char *raw,
                        size_t rawcap)
{
    const char *dot = strchr(last, '.');
    if (!dot || (size_t)(dot - last) >= tagcap || dot == last) return -1;
    snprintf(tag, tagcap, "%.*s", (int)(dot - last), last);
    if (strcmp(tag, "g") != 0 && strspn(tag, "0123456789abcdef") != 8) return -1;
    if (s_parse_evid(dot + 1, after) < 0 || strlen(dot + 1) >= rawcap) return -1;
    snprintf(raw, rawcap, "%s", dot + 1);
    return 0;
}

static void s_unlink(stream_follower_t *f)
{
    *f->prev = f->next;
    if (f->next) f->next->prev = f->prev;
}

stream_follower_t *stream_follower_start(stream_log_t *self, mcp_session_t *s,
                                         const char *last_event_id, stream_follower_event_fn *event,
                                         stream_follower_end_fn *end, void *ctx)
{
    char tag[16] = "g", raw[48] = "";
    evid_t after = {0, 0};
    if (last_event_id &&
        s_parse_last(last_event_id, tag, sizeof tag, &after, raw, sizeof raw) < 0) {
        self->stats.unknown++;
        return NULL;
    }
    stream_follower_t *f = xcalloc(1, sizeof *f);
    f->log = self;
    f->session = s;
    mcp_session_hold(s);
    snprintf(f->tag, sizeof f->tag, "%s", tag);
    s_log_key(f->key, sizeof f->key, s, tag);
    f->last = after;
    f->replaying = 1;
    f->pending_tail = &f->pending;
    f->token = ++self->next_token;
    f->event = event;
    f->end = end;
    f->ctx = ctx;
    f->next = self->followers;
    if (self->followers) self->followers->prev = &f->next;
    f->prev = &self->followers;
    self->followers = f;
    if (last_event_id) self->stats.resumed++;
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%ld", stream_log_replay_ms(self));
    const char *args[] = {f->key, bus_inbox(self->bus), raw, ttl};
    if (store_eval(*self->store_p, self->follow, s_on_replay, f, 1, 4, args) < 0) {
        s_unlink(f);
        mcp_session_release(f->session);
        free(f);
        return NULL;
    }
    if (!last_event_id) /* a fresh GET stream replaces the session's older one, anywhere */
        bus_publish(self->bus,
                    json_pack("{s:s,s:s,s:s,s:s,s:I}", "t", "sget", "tn", s->tenant->name, "id",
                              s->id, "inbox", bus_inbox(self->bus), "token", (json_int_t)f->token));
    return f;
}

void stream_follower_stop(stream_follower_t **f_p)
{
    stream_follower_t *f = *f_p;
    if (!f) return;
    *f_p = NULL;
    stream_log_t *self = f->log;
    s_unlink(f);
    int shared = 0; /* another follower here holds the same stream: keep the claim */
    for (stream_follower_t *o = self->followers; o; o = o->next) shared |= !strcmp(o->key, f->key);
    if (!shared) {
        const char *args[] = {f->key, bus_inbox(self->bus)};
        store_eval(*self->store_p, self->unfollow, NULL, NULL, 1, 2, args);
    }
    f->pending_tail = &f->pending;
    while (f->pending) {
        pending_t *p = f->pending;
        f->pending = p->next;
        free(p->sse_id);
        json_decref(p->msg);
        free(p);
    }
    mcp_session_release(f->session);
    if (f->replaying) { /* s_on_replay frees it */
        f->log = NULL;
        return;
    }
    free(f);
}

/* "<log key>\n<id>\n<final>\n<json>", routed here by a writer's script. */
static void s_on_inbox(void *arg, const char *data, size_t len)
{
    stream_log_t *self = arg;
    const char *p = data, *end = data + len, *fields[3];
    size_t lens[3];
    for (int i = 0; i < 3; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return;
        fields[i] = p;
        lens[i] = (size_t)(nl - p);
        p = nl + 1;
    }
    char id_text[48];
    evid_t id;
    if (lens[1] >= sizeof id_text) return;
    snprintf(id_text, sizeof id_text, "%.*s", (int)lens[1], fields[1]);
    if (s_parse_evid(id_text, &id) < 0) return;
    json_t *msg = json_loadb(p, (size_t)(end - p), 0, NULL);
    if (!msg) return;
    int final = lens[2] && fields[2][0] == '1';
    for (stream_follower_t *f = self->followers, *next; f; f = next) {
        next = f->next;
        if (strlen(f->key) != lens[0] || memcmp(f->key, fields[0], lens[0]) != 0) continue;
        char sse_id[96];
        snprintf(sse_id, sizeof sse_id, "%s.%s", f->tag, id_text);
        if (f->replaying) { /* the replay goes first */
            pending_t *q = xcalloc(1, sizeof *q);
            q->id = id;
            q->sse_id = xstrdup(sse_id);
            q->msg = json_incref(msg);
            q->final = final;
            *f->pending_tail = q;
            f->pending_tail = &q->next;
            continue;
        }
        s_deliver(f, id, sse_id, msg, final);
        if (f->ended) s_end(f);
    }
    json_decref(msg);
}

/* A newer GET stream of a session, or the session's end: older GET streams here end. */
static void s_end_followers(stream_log_t *self, const json_t *ev, int get_only)
{
    const char *tn = json_string_value(json_object_get(ev, "tn"));
    const char *id = json_string_value(json_object_get(ev, "id"));
    const char *inbox = json_string_value(json_object_get(ev, "inbox"));
    uint64_t token = (uint64_t)json_integer_value(json_object_get(ev, "token"));
    if (!tn || !id) return;
    for (stream_follower_t *f = self->followers, *next; f; f = next) {
        next = f->next;
        int mine = inbox && !strcmp(inbox, bus_inbox(self->bus)) && f->token == token;
        if (!strcmp(f->session->id, id) && !strcmp(f->session->tenant->name, tn) && !mine &&
            (!get_only || !strcmp(f->tag, "g")))
            s_end(f);
    }
}

static void s_on_get_event(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    s_end_followers(arg, ev, 1);
}

static void s_on_session_event(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    const char *op = json_string_value(json_object_get(ev, "op"));
    if (op && !strcmp(op, "gone")) s_end_followers(arg, ev, 0);
}

/* Claims expire with the log; long-lived GET streams renew theirs. */
static void s_on_refresh(loop_t *loop, void *arg)
{
    (void)loop;
    stream_log_t *self = arg;
    for (stream_follower_t *f = self->followers; f; f = f->next)
        if (!f->ended)
            store_writef(*self->store_p, "SET %s:fw %s PX %ld", f->key, bus_inbox(self->bus),
                         stream_log_replay_ms(self));
}

stream_log_t *stream_log_new(loop_t *loop, store_t **store_p, bus_t *bus, mcp_sessions_t *sessions,
                             const stream_log_conf_t *conf)
{
    stream_log_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->timer = loop_timer_add(loop, REFRESH_MS, REFRESH_MS, s_on_refresh, self);
    self->store_p = store_p;
    self->bus = bus;
    self->sessions = sessions;
    self->conf = *conf;
    self->append = store_script(*store_p, s_append_lua);
    self->follow = store_script(*store_p, s_follow_lua);
    self->unfollow = store_script(*store_p, s_unfollow_lua);
    bus_on_inbox(bus, s_on_inbox, self);
    bus_on(bus, "sget", s_on_get_event, self);
    bus_on(bus, "sess", s_on_session_event, self);
    mcp_sessions_on_notify(sessions, s_session_notify, self);
    return self;
}

void stream_log_destroy(stream_log_t **self_p)
{
    stream_log_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->timer);
    while (self->followers) {
        stream_follower_t *f = self->followers;
        stream_follower_stop(&f);
    }
    free(self);
    *self_p = NULL;
}

const stream_log_stats_t *stream_log_stats(const stream_log_t *self)
{
    return &self->stats;
}
