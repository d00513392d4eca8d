/* executor-node/link/zmsg.c — see zmsg.h. The table below is the whole protocol of the channel:
 * what each type is called and how its payload is written and read. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/mpack.h"
#include "proto/job.h"
#include "zmsg.h"

/* ---- payloads ------------------------------------------------------------------------------ */

/* A str into a fixed field, cut to fit (names, versions and layer lists are short; a longer
 * one is a zygote's bug, not worth refusing the message for). */
static void s_str_into(mpr_t *r, char *dst, size_t cap)
{
    const char *s;
    uint32_t n;
    if (mpr_str(r, &s, &n) == 0) snprintf(dst, cap, "%.*s", (int)n, s);
}

static void s_hello_encode(const zmsg_t *m, mpw_t *w)
{
    const zmsg_hello_t *h = &m->hello;
    mpw_map(w, 6);
    mpw_kv_str(w, "profile", h->profile);
    mpw_kv_str(w, "python", h->python);
    mpw_str(w, "packages");
    mpw_strn(w, h->packages ? h->packages : "", h->packages ? h->packages_len : 0);
    mpw_kv_str(w, "layers", h->layers);
    mpw_kv_uint(w, "base_vm", h->base_vm);
    mpw_kv_int(w, "landlock_abi", h->landlock_abi);
}

static void s_hello_field(mpr_t *r, const char *k, uint32_t kl, zmsg_hello_t *h)
{
    if (mpr_key_is(k, kl, "profile"))
        s_str_into(r, h->profile, sizeof h->profile);
    else if (mpr_key_is(k, kl, "python"))
        s_str_into(r, h->python, sizeof h->python);
    else if (mpr_key_is(k, kl, "layers"))
        s_str_into(r, h->layers, sizeof h->layers);
    else if (mpr_key_is(k, kl, "base_vm"))
        mpr_uint(r, &h->base_vm);
    else if (mpr_key_is(k, kl, "landlock_abi"))
        mpr_int(r, &h->landlock_abi);
    else if (mpr_key_is(k, kl, "packages")) {
        uint32_t n;
        if (mpr_str(r, &h->packages, &n) == 0) h->packages_len = n;
    } else
        mpr_skip(r);
}

static void s_stats_encode(const zmsg_t *m, mpw_t *w)
{
    const zmsg_stats_t *s = &m->stats;
    if (!s->job) { /* pool news between jobs */
        mpw_map(w, 2);
        mpw_kv_uint(w, "forks", s->forks);
        mpw_kv_uint(w, "pool", s->pool);
        return;
    }
    mpw_map(w, 10);
    mpw_kv_str(w, "status", status_name(s->status));
    mpw_kv_double(w, "wall_ms", s->wall_ms);
    mpw_kv_double(w, "cpu_ms", s->cpu_ms);
    mpw_kv_int(w, "max_rss_kb", s->max_rss_kb);
    mpw_kv_str(w, "syscall", s->syscall[0] ? s->syscall : NULL);
    mpw_kv_uint(w, "forks", s->forks);
    mpw_kv_uint(w, "pool", s->pool);
    mpw_kv_int(w, "kind", s->kind);
    mpw_kv_bool(w, "session", s->session);
    mpw_kv_bool(w, "lowered", s->lowered);
}

static void s_stats_field(mpr_t *r, const char *k, uint32_t kl, zmsg_stats_t *s)
{
    if (mpr_key_is(k, kl, "status")) {
        const char *v;
        uint32_t vl;
        s->job = 1;
        if (mpr_str(r, &v, &vl) == 0 && status_parse_n(v, vl, &s->status) < 0)
            s->status = ST_INTERNAL_ERROR;
    } else if (mpr_key_is(k, kl, "wall_ms"))
        mpr_double(r, &s->wall_ms);
    else if (mpr_key_is(k, kl, "cpu_ms"))
        mpr_double(r, &s->cpu_ms);
    else if (mpr_key_is(k, kl, "max_rss_kb"))
        mpr_int(r, &s->max_rss_kb);
    else if (mpr_key_is(k, kl, "forks"))
        mpr_uint(r, &s->forks);
    else if (mpr_key_is(k, kl, "pool"))
        mpr_uint(r, &s->pool);
    else if (mpr_key_is(k, kl, "kind"))
        mpr_int(r, &s->kind);
    else if (mpr_key_is(k, kl, "session"))
        mpr_bool(r, &s->session);
    else if (mpr_key_is(k, kl, "lowered"))
        mpr_bool(r, &s->lowered);
    else if (mpr_key_is(k, kl, "syscall")) {
        if (!mpr_nil(r)) s_str_into(r, s->syscall, sizeof s->syscall);
    } else
        mpr_skip(r);
}

static void s_progress_encode(const zmsg_t *m, mpw_t *w)
{
    const zmsg_progress_t *p = &m->progress;
    if (!p->stream) {
        mpw_map(w, 1);
        mpw_kv_str(w, "state", "running");
        return;
    }
    mpw_map(w, 2);
    mpw_kv_str(w, "stream", p->stream);
    mpw_str(w, "data");
    mpw_bin(w, p->data, p->len);
}

/* PROTOCOL.md §3's chunk: {state: "running"} or {stream: "stdout"|"stderr", data: bin}. */
static void s_progress_field(mpr_t *r, const char *k, uint32_t kl, zmsg_progress_t *p, int *running)
{
    const char *v;
    uint32_t vl;
    if (mpr_key_is(k, kl, "state")) {
        if (mpr_str(r, &v, &vl) == 0) *running = mpr_key_is(v, vl, "running");
    } else if (mpr_key_is(k, kl, "stream")) {
        if (mpr_str(r, &v, &vl) < 0) return;
        p->stream = mpr_key_is(v, vl, "stdout")   ? "stdout"
                    : mpr_key_is(v, vl, "stderr") ? "stderr"
                                                  : NULL;
        if (!p->stream) mpr_fail(r, "unknown progress stream");
    } else if (mpr_key_is(k, kl, "data")) {
        uint32_t n;
        if (mpr_bytes(r, &p->data, &n) == 0) p->len = n;
    } else
        mpr_skip(r);
}

static const char *const s_session_events[] = {
    [ZS_UP] = "up", [ZS_DOWN] = "down", [ZS_MEMORY] = "memory"};

static void s_session_encode(const zmsg_t *m, mpw_t *w)
{
    const zmsg_session_t *z = &m->session;
    mpw_map(w, 7);
    mpw_kv_str(w, "event", s_session_events[z->event]);
    mpw_kv_str(w, "tenant", z->tenant);
    mpw_kv_int(w, "idle_timeout_s", z->idle_timeout_s);
    mpw_kv_int(w, "memory_mb", z->memory_mb);
    mpw_kv_uint(w, "memory_kb", z->memory_kb);
    mpw_kv_str(w, "reason", z->reason);
    mpw_kv_int(w, "retention_s", z->retention_s);
}

static void s_session_field(mpr_t *r, const char *k, uint32_t kl, zmsg_session_t *z)
{
    const char *v;
    uint32_t vl;
    int64_t i;
    if (mpr_key_is(k, kl, "event")) {
        if (mpr_str(r, &v, &vl) < 0) return;
        for (int e = ZS_UP; e <= ZS_MEMORY; e++)
            if (mpr_key_is(v, vl, s_session_events[e])) z->event = (zygote_session_event_t)e;
        if (!z->event) mpr_fail(r, "unknown session event");
    } else if (mpr_key_is(k, kl, "tenant")) {
        s_str_into(r, z->tenant, sizeof z->tenant);
    } else if (mpr_key_is(k, kl, "reason")) {
        s_str_into(r, z->reason, sizeof z->reason);
    } else if (mpr_key_is(k, kl, "idle_timeout_s") || mpr_key_is(k, kl, "memory_mb")) {
        if (mpr_int(r, &i) == 0 && (i < 0 || i > (int64_t)1 << 40)) mpr_fail(r, "out of range");
        *(mpr_key_is(k, kl, "memory_mb") ? &z->memory_mb : &z->idle_timeout_s) = i;
    } else if (mpr_key_is(k, kl, "memory_kb")) {
        mpr_uint(r, &z->memory_kb);
    } else if (mpr_key_is(k, kl, "retention_s")) {
        if (mpr_int(r, &i) == 0 && (i < 0 || i > JOB_MAX_RETENTION_S)) mpr_fail(r, "out of range");
        z->retention_s = i;
    } else {
        mpr_skip(r);
    }
}

/* One map, each key handed to the type's field reader; unknown keys are skipped (a newer
 * zygote may add some). */
static int s_map_decode(mpr_t *r, zmsg_t *m)
{
    uint32_t n;
    int running = 0;
    if (mpr_map(r, &n) < 0) return -1;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t kl;
        if (mpr_str(r, &k, &kl) < 0) break;
        if (m->type == ZM_HELLO)
            s_hello_field(r, k, kl, &m->hello);
        else if (m->type == ZM_STATS)
            s_stats_field(r, k, kl, &m->stats);
        else if (m->type == ZM_SESSION)
            s_session_field(r, k, kl, &m->session);
        else
            s_progress_field(r, k, kl, &m->progress, &running);
    }
    if (m->type == ZM_STATS && !m->stats.job) /* pool news: the job's fields mean nothing */
        m->stats = (zmsg_stats_t){.forks = m->stats.forks, .pool = m->stats.pool};
    if (m->type == ZM_SESSION && !r->err && (!m->session.event || !m->id))
        return mpr_fail(r, "session news without an event or a session id");
    if (m->type == ZM_PROGRESS && !r->err) {
        if (m->progress.stream && !m->progress.data) return mpr_fail(r, "progress without data");
        if (!m->progress.stream && !running) return mpr_fail(r, "progress of no known kind");
        if (!m->progress.stream) m->progress.data = NULL, m->progress.len = 0;
    }
    return r->err ? -1 : 0;
}

/* ---- the table ----------------------------------------------------------------------------- */

typedef enum {
    SHAPE_RAW,   /* the payload is the message (a JobSpec, a Result, text) */
    SHAPE_EMPTY, /* nothing but the type and the id */
    SHAPE_MAP,   /* a msgpack map, through encode and s_map_decode */
} shape_t;

typedef struct {
    const char *name;
    shape_t shape;
    void (*encode)(const zmsg_t *m, mpw_t *w);
} row_t;

static const row_t s_rows[] = {
    [ZM_HELLO] = {"HELLO", SHAPE_MAP, s_hello_encode},
    [ZM_FATAL] = {"FATAL", SHAPE_RAW, NULL},
    [ZM_JOB] = {"JOB", SHAPE_RAW, NULL},
    [ZM_CANCEL] = {"CANCEL", SHAPE_EMPTY, NULL},
    [ZM_RESULT] = {"RESULT", SHAPE_RAW, NULL},
    [ZM_PROGRESS] = {"PROGRESS", SHAPE_MAP, s_progress_encode},
    [ZM_RETIRE] = {"RETIRE", SHAPE_EMPTY, NULL},
    [ZM_STATS] = {"STATS", SHAPE_MAP, s_stats_encode},
    [ZM_SESSION] = {"SESSION", SHAPE_MAP, s_session_encode},
    [ZM_SESSION_END] = {"SESSION_END", SHAPE_RAW, NULL},
    [ZM_EGRESS] = {"EGRESS", SHAPE_RAW, NULL},
    [ZM_EGRESS_STOP] = {"EGRESS_STOP", SHAPE_EMPTY, NULL},
};

static const row_t *s_row(unsigned type)
{
    return type < sizeof s_rows / sizeof s_rows[0] && s_rows[type].name ? &s_rows[type] : NULL;
}

const char *zmsg_name(uint8_t type)
{
    const row_t *row = s_row(type);
    return row ? row->name : "?";
}

void zmsg_encode(const zmsg_t *m, buf_t *out)
{
    const row_t *row = s_row(m->type);
    assert(row && row->shape == SHAPE_MAP);
    mpw_t w;
    mpw_init(&w, out);
    row->encode(m, &w);
}

int zmsg_decode(uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload, size_t len,
                zmsg_t *m, char *err, size_t errlen)
{
    const row_t *row = s_row(type);
    memset(m, 0, sizeof *m);
    m->type = (zmsg_type_t)type;
    m->id = id;
    m->payload = payload;
    m->len = len;
    if (!row) {
        snprintf(err, errlen, "unknown message type %u", type);
        return -1;
    }
    if (row->shape == SHAPE_RAW) return 0;
    if (row->shape == SHAPE_EMPTY) {
        if (len == 0) return 0;
        snprintf(err, errlen, "%s carries no payload", row->name);
        return -1;
    }
    mpr_t r;
    mpr_init(&r, payload, len);
    if (s_map_decode(&r, m) < 0 || mpr_done(&r) < 0) {
        snprintf(err, errlen, "%s: %s", row->name, r.err ? r.err : "trailing bytes");
        return -1;
    }
    return 0;
}

/* ---- on a channel -------------------------------------------------------------------------- */

int zmsg_send(zchan_t *chan, const zmsg_t *m)
{
    const row_t *row = s_row(m->type);
    assert(row);
    if (row->shape != SHAPE_MAP)
        return zchan_send(chan, (uint8_t)m->type, m->id,
                          row->shape == SHAPE_RAW ? m->payload : NULL,
                          row->shape == SHAPE_RAW ? m->len : 0);
    buf_t out;
    buf_init(&out);
    zmsg_encode(m, &out);
    int rc = zchan_send(chan, (uint8_t)m->type, m->id, out.data, out.len);
    explicit_bzero(out.data, out.len); /* progress carries a job's output (scrub.h) */
    buf_free(&out);
    return rc;
}

typedef struct {
    zmsg_fn *fn;
    void *arg;
} reader_t;

static void s_on_raw(void *arg, uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload,
                     size_t len)
{
    reader_t *rd = arg;
    zmsg_t m;
    char err[128];
    if (zmsg_decode(type, id, payload, len, &m, err, sizeof err) < 0) {
        log_warn("event=bad_channel_message type=%s error=\"%s\"", zmsg_name(type), err);
        return;
    }
    rd->fn(rd->arg, &m);
}

int zmsg_read(zchan_t *chan, zmsg_fn *fn, void *arg)
{
    reader_t rd = {fn, arg};
    return zchan_read(chan, s_on_raw, &rd);
}
