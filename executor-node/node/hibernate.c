/* executor-node/node/hibernate.c — see hibernate.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "proto/job.h"
#include "proto/result.h"
#include "hibernate.h"

#define CHECKPOINT_JOB_MS 60000 /* a snapshot job's own wall limit */

typedef struct op {
    uint8_t job[ID_BYTES];
    uint8_t session[ID_BYTES];
    char tenant[65];
    int zygote;
    node_sessions_due_t what;
    char reason[WIRE_MAX_REASON + 1];
    long memory_mb, idle_timeout_s, retention_s;
    int storing; /* its write is with the store, which answers it */
    int freed;   /* the session goes once its checkpoint is in (decided when it came back) */
    hibernate_t *owner;
    struct op *next;
} op_t;

struct hibernate {
    checkpoint_store_t *store;
    node_sessions_t *sessions;
    char node[65];
    hibernate_io_t io;
    op_t *ops;
    size_t n_ops;
};

hibernate_t *hibernate_new(checkpoint_store_t *store, node_sessions_t *sessions, const char *node,
                           const hibernate_io_t *io)
{
    hibernate_t *h = xcalloc(1, sizeof *h);
    h->store = store;
    h->sessions = sessions;
    snprintf(h->node, sizeof h->node, "%s", node);
    h->io = *io;
    return h;
}

/* (the store is destroyed first: it answers the writes it holds, which settle here) */
void hibernate_destroy(hibernate_t **self_p)
{
    hibernate_t *h = *self_p;
    if (!h) return;
    while (h->ops) {
        op_t *o = h->ops;
        h->ops = o->next;
        free(o);
    }
    free(h);
    *self_p = NULL;
}

size_t hibernate_pending(const hibernate_t *h)
{
    return h->n_ops;
}

static void s_unlink(hibernate_t *h, op_t *o)
{
    for (op_t **p = &h->ops; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            h->n_ops--;
            return;
        }
}

/* The checkpoint is over (ok or not): the session is freed, or lives on. */
static void s_settle(hibernate_t *h, op_t *o, int ok, const char *why)
{
    char idstr[ID_STR_LEN + 1], reason[WIRE_MAX_REASON + 1];
    id_format(o->session, idstr);
    s_unlink(h, o);
    node_session_t *s = node_sessions_get(h->sessions, o->session);
    if (s) s->checkpointing = 0;
    if (s && ok) s->dirty = 0;
    if (!ok) log_warn("event=checkpoint_failed session=%s error=\"%s\"", idstr, why ? why : "?");
    /* a failed checkpoint of a session being freed: it is freed all the same, and ends */
    int freed = ok ? o->freed
                   : o->what != SESSION_DUE_CHECKPOINT &&
                         (o->what == SESSION_DUE_DRAIN || !h->io.waiting(h->io.arg, o->session));
    if (s && !freed) {
        /* kept: a checkpoint only, or a job came for it meanwhile (it is used: not idle) */
        log_info("event=session_checkpointed session=%s kept=1 ok=%d", idstr, ok);
        h->io.release(h->io.arg, o->session);
        free(o);
        return;
    }
    if (ok)
        snprintf(reason, sizeof reason, HIBERNATED_PREFIX "%.200s", o->reason);
    else
        snprintf(reason, sizeof reason, "%.110s (it could not be checkpointed: %.90s)", o->reason,
                 why ? why : "?");
    if (s) {
        s->ending = 1;
        log_info("event=session_ending session=%s reason=\"%s\"", idstr, reason);
        h->io.end_session(h->io.arg, o->zygote, o->session, reason);
    }
    free(o);
}

static void s_on_stored(void *arg, int ok, const char *why)
{
    op_t *o = arg;
    s_settle(o->owner, o, ok, why);
}

/* JSON text of s with its quotes and backslashes escaped (our own words, and profile names). */
static void s_json_str(buf_t *b, const char *s)
{
    buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') buf_append(b, "\\", 1);
        if ((unsigned char)*s >= 0x20) buf_append(b, s, 1);
    }
    buf_puts(b, "\"");
}

/* The snapshot came back: to Redis with what the session resumes with. */
static void s_store(hibernate_t *h, op_t *o, const result_t *res)
{
    char idstr[ID_STR_LEN + 1];
    id_format(o->session, idstr);
    const char *profile = h->io.service(h->io.arg, o->zygote);
    uint64_t now = clock_wall_ms();
    buf_t meta;
    buf_init(&meta);
    buf_puts(&meta, "{\"profile\":");
    s_json_str(&meta, profile ? profile : "");
    buf_printf(&meta,
               ",\"memory_mb\":%ld,\"idle_timeout_s\":%ld,\"retention_s\":%ld,\"cells\":%u,"
               "\"created_ms\":%llu,\"executor\":",
               o->memory_mb, o->idle_timeout_s, o->retention_s, res->session.cell,
               (unsigned long long)now);
    s_json_str(&meta, h->node);
    buf_puts(&meta, ",\"reason\":");
    s_json_str(&meta, o->what == SESSION_DUE_CHECKPOINT ? "checkpoint" : o->reason);
    buf_puts(&meta, "}");
    buf_append(&meta, "", 1);
    /* Freed, its record says hibernated once the checkpoint is in, and it ends then, whatever
     * comes for it meanwhile (those jobs hear it is hibernated, and resume it elsewhere). Not
     * freed after all when a job came for it while the snapshot was taken (it is not idle). */
    o->freed = o->what == SESSION_DUE_DRAIN ||
               (o->what == SESSION_DUE_FREE && !h->io.waiting(h->io.arg, o->session));
    checkpoint_t c = {.tenant = o->tenant,
                      .session = idstr,
                      .blob = (const uint8_t *)res->snapshot,
                      .len = res->snapshot_len,
                      .meta = (const char *)meta.data,
                      .cells = res->session.cell,
                      .now_ms = now,
                      .expires_ms = now + (uint64_t)o->retention_s * 1000u,
                      .freed = o->freed,
                      .reason = NULL};
    char freed_reason[WIRE_MAX_REASON + 1];
    if (c.freed) {
        snprintf(freed_reason, sizeof freed_reason, HIBERNATED_PREFIX "%.200s", o->reason);
        c.reason = freed_reason;
    }
    o->storing = 1;
    checkpoint_store_put(h->store, &c, s_on_stored, o);
    buf_free(&meta);
}

void hibernate_begin(hibernate_t *h, const node_sessions_end_t *due)
{
    node_session_t *s = node_sessions_get(h->sessions, due->id);
    if (!s) return;
    op_t *o = xcalloc(1, sizeof *o);
    o->owner = h;
    id_new(o->job);
    memcpy(o->session, due->id, ID_BYTES);
    snprintf(o->tenant, sizeof o->tenant, "%s", s->tenant);
    o->zygote = due->zygote;
    o->what = due->what;
    snprintf(o->reason, sizeof o->reason, "%s", due->reason);
    o->memory_mb = s->memory_mb;
    o->idle_timeout_s = s->idle_timeout_s;
    o->retention_s = s->retention_s;
    o->next = h->ops;
    h->ops = o;
    h->n_ops++;
    /* the job: the session's snapshot, as the front-end's create_state_snapshot asks for it */
    jobspec_t spec;
    jobspec_init(&spec);
    spec.kind = JOB_SESSION_SNAPSHOT;
    spec.tenant = s->tenant;
    spec.service = (char *)h->io.service(h->io.arg, due->zygote);
    spec.code = "";
    spec.limits.wall_ms = CHECKPOINT_JOB_MS;
    spec.has_session = 1;
    memcpy(spec.session, due->id, ID_BYTES);
    spec.submitted_ms = clock_wall_ms();
    buf_t b;
    buf_init(&b);
    jobspec_encode(&spec, &b);
    h->io.send_job(h->io.arg, due->zygote, o->job, b.data, b.len);
    buf_free(&b);
}

int hibernate_on_result(hibernate_t *h, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    op_t *o = h->ops;
    while (o && memcmp(o->job, id, ID_BYTES)) o = o->next;
    if (!o) return 0;
    result_t res;
    char err[160];
    if (result_decode(body, len, &res, err, sizeof err) < 0) {
        s_settle(h, o, 0, err);
        return 1;
    }
    if (res.status == ST_OK && res.snapshot && res.snapshot_len)
        s_store(h, o, &res);
    else
        s_settle(h, o, 0,
                 res.error.present && res.error.message ? res.error.message
                                                        : status_name(res.status));
    /* the snapshot's bytes are the tenant's: zeroed before they go */
    if (res.snapshot) explicit_bzero(res.snapshot, res.snapshot_len);
    result_clear(&res);
    return 1;
}

void hibernate_zygote_down(hibernate_t *h, int zi)
{
    for (op_t *o = h->ops, *next; o; o = next) {
        next = o->next;
        if (o->zygote == zi && !o->storing) {
            s_unlink(h, o);
            free(o); /* the session went with its zygote: nothing to free, nothing to keep */
        }
    }
}
