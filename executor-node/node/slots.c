/* executor-node/node/slots.c — see slots.h. Every job that takes a slot leaves it through s_end,
 * which is where its one RESULT (or ANSWER) per interested broker goes out — a job that waited
 * for its dependency environment and never reached a zygote included. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pep440.h"
#include "common/pep508.h"
#include "proto/job.h"
#include "proto/result.h"
#include "executor-node/link/sessions_text.h"
#include "claims.h"
#include "credits.h"
#include "hibernate.h"
#include "node_sessions.h"
#include "slots.h"

#define CLAIMS_MAX 262144
#define CLAIMS_DONE_MS                                                                             \
    60000 /* a finished job is remembered this long (a resubmission comes                          \
             seconds after its broker died) */

#define SLOT_FREE    (-1)
#define SLOT_WAITING (-2) /* its dependencies' environment is being built or started (envs.h) */
#define SLOT_QUEUED  (-3) /* a session's job behind an earlier one on the same session */

typedef struct {
    uint8_t id[ID_BYTES];
    int zygote; /* index, SLOT_FREE or SLOT_WAITING */
    int link;   /* the broker that sent it */
    int has_session;
    uint8_t session[ID_BYTES]; /* the session the job acts on (busy until its answer) */
    /* a waiting job: its environment and its JobSpec, kept until it can be sent */
    int env;
    char env_key[49];
    uint8_t *body;
    size_t body_len;
    char service[65];
    /* a queued job: its place among the session's, and whose it is (any job's tenant: an egress
     * grant names it) */
    uint64_t queued_seq;
    char tenant[65];
    uint64_t wall_ms;  /* what was left of its deadline when it arrived (0: none) */
    int egress;        /* granted the network: its Result waits for its account */
} slot_t;

struct slots {
    const node_conf_t *conf;
    slots_io_t io; /* the links' and zygotes' verbs (slots.h) */
    zygotes_t *zygotes;
    exec_metrics_t *metrics;
    char layers[128];
    slot_t *slot; /* node_conf_jobs() of them */
    broker_link_t **links;
    int n_links;
    credits_t *credits;
    claims_t *claims;
    envs_t *envs; /* NULL without a package source */
    egress_link_t *egress; /* NULL: no job gets network */
    long n_waiting;
    node_sessions_t *sessions;      /* NULL when the node keeps none */
    uint8_t (*ready_ids)[ID_BYTES]; /* READY's session list, filled at each READY */
    long mem_free_mb;               /* the machine's available memory, at the last session tick */
    uint64_t sessions_sent_ms;      /* the last SESSIONS to the brokers */
    uint64_t queued_seq;            /* the last queued session job's number */
    hibernate_t *hibernate;         /* NULL: sessions the node frees just end */
    int sessions_leaving;           /* every session is to be checkpointed and freed */
    /* draining (slots_drain): the LEAVING each broker hears, and the hook */
    int draining;
    leaving_t leaving;
    slots_drain_hook_t drain_hook;
};

/* ---- credit on the wire ---------------------------------------------------------------------- */

static void s_grant(void *arg, int link, uint32_t n)
{
    slots_t *self = arg;
    if (self->links) self->io.send_credit(self->links[link], n);
}

static void s_reclaim(void *arg, int link, uint32_t n)
{
    slots_t *self = arg;
    if (self->links) self->io.send_reclaim(self->links[link], n);
}

/* A waiting job's JobSpec copy goes: zeroed first (tenant data, scrub.h's rule). */
static void s_drop_body(slots_t *self, slot_t *s)
{
    if (s->body) {
        explicit_bzero(s->body, s->body_len);
        free(s->body);
        self->n_waiting--;
    }
    s->body = NULL;
    s->body_len = 0;
}

slots_t *slots_new(const node_conf_t *conf, zygotes_t *zygotes, exec_metrics_t *metrics,
                   const char *layers)
{
    static const slots_io_t io = {broker_link_up,
                                  broker_link_send_result,
                                  broker_link_send_simple,
                                  broker_link_send_progress,
                                  broker_link_send_sessions,
                                  broker_link_send_credit,
                                  broker_link_send_reclaim,
                                  broker_link_send_held,
                                  zygotes_pick,
                                  zygotes_env_pick,
                                  zygotes_env_start,
                                  zygotes_send_job,
                                  zygotes_cancel,
                                  zygotes_end_session,
                                  zygotes_services,
                                  zygotes_packages,
                                  zygotes_python,
                                  zygotes_profile,
                                  zygotes_listener,
                                  zygotes_send_egress,
                                  zygotes_egress_stop,
                                  broker_link_send_leaving};
    return slots_new_io(conf, &io, zygotes, metrics, layers);
}

slots_t *slots_new_io(const node_conf_t *conf, const slots_io_t *io, zygotes_t *zygotes,
                      exec_metrics_t *metrics, const char *layers)
{
    slots_t *self = xcalloc(1, sizeof *self);
    self->conf = conf;
    self->io = *io;
    self->zygotes = zygotes;
    self->metrics = metrics;
    snprintf(self->layers, sizeof self->layers, "%s", layers);
    self->slot = xcalloc((size_t)node_conf_jobs(conf), sizeof *self->slot);
    for (long i = 0; i < node_conf_jobs(conf); i++) self->slot[i].zygote = SLOT_FREE;
    self->claims = claims_new(CLAIMS_MAX, CLAIMS_DONE_MS);
    return self;
}

void slots_destroy(slots_t **self_p)
{
    slots_t *self = *self_p;
    if (!self) return;
    credits_destroy(&self->credits);
    claims_destroy(&self->claims);
    node_sessions_destroy(&self->sessions);
    free(self->ready_ids);
    for (long i = 0; i < node_conf_jobs(self->conf); i++) s_drop_body(self, &self->slot[i]);
    free(self->slot);
    free(self);
    *self_p = NULL;
}

void slots_set_links(slots_t *self, broker_link_t **links, int n)
{
    credits_io_t io = {s_grant, s_reclaim, self};
    self->credits = credits_new((uint32_t)node_conf_jobs(self->conf), n, &io, NULL);
    self->links = links;
    self->n_links = n;
}

void slots_set_envs(slots_t *self, envs_t *envs)
{
    self->envs = envs;
}

void slots_tick(slots_t *self)
{
    claims_expire(self->claims, clock_mono_ms());
}

/* ---- the slot table ------------------------------------------------------------------------- */

static slot_t *s_slot_of(slots_t *self, const uint8_t *id)
{
    for (long i = 0; i < node_conf_jobs(self->conf); i++)
        if (self->slot[i].zygote != SLOT_FREE && memcmp(self->slot[i].id, id, ID_BYTES) == 0)
            return &self->slot[i];
    return NULL;
}

static slot_t *s_slot_free(slots_t *self)
{
    for (long i = 0; i < node_conf_jobs(self->conf); i++)
        if (self->slot[i].zygote == SLOT_FREE) return &self->slot[i];
    return NULL;
}

/* The job in slot s ended with body: its slot's credit goes where credits.h says, and every
 * broker waiting for the answer gets it. */
static void s_session_next(slots_t *self, const uint8_t session[ID_BYTES]);

static void s_end(slots_t *self, slot_t *s, const uint8_t *body, size_t len)
{
    int origin = s->link, was_queued = s->zygote == SLOT_QUEUED, had_session = s->has_session;
    uint8_t session[ID_BYTES];
    memcpy(session, s->session, ID_BYTES);
    if (s->has_session && !was_queued) node_sessions_busy(self->sessions, s->session, 0, clock_mono_ms());
    if (s->egress) egress_link_forget(self->egress, s->id); /* answered without its account */
    s->egress = 0;
    s->has_session = 0;
    s_drop_body(self, s);
    s->zygote = SLOT_FREE;
    int to = credits_finish(self->credits, origin);
    self->metrics->busy = credits_busy(self->credits);
    if (to == origin)
        self->io.send_result(self->links[origin], s->id, body, len, 1);
    else if (self->io.link_up(self->links[origin]))
        self->io.send_result(self->links[origin], s->id, body, len, 0);
    unsigned also = claims_on_done(self->claims, s->id, clock_mono_ms());
    for (int i = 0; i < self->n_links; i++)
        if (i != origin && (also >> i & 1) && self->io.link_up(self->links[i]))
            self->io.send_result(self->links[i], s->id, body, len, 0);
    /* the session's next job goes once this one's answer has */
    if (had_session && !was_queued) s_session_next(self, session);
}

/* The job in slot s is answered here, without having run. */
static void s_answer(slots_t *self, slot_t *s, status_t st, const char *type, const char *why)
{
    buf_t b;
    buf_init(&b);
    result_encode_simple(&b, st, type, why);
    s_end(self, s, b.data, b.len);
    buf_free(&b);
}

/* ---- dependency environments (envs.h) -------------------------------------------------------- */

/* The environment a job for zygote zi needs: its index; -1 when the profile's own packages do
 * (or the job names no dependencies, or the node has no package source), -2 when no more
 * environments can be tracked now, -3 when a requirement is not one a job may ask for (why
 * says which: the front-end refuses them too, but a job may come from any client of the
 * broker, and what reaches pip must never be a path, an archive or a URL: common/pep508.h). */
static int s_env_of(slots_t *self, const worker_msg_t *m, int zi, char *why, size_t whylen)
{
    char **deps;
    size_t n_deps;
    if (!self->envs || !envs_enabled(self->envs) ||
        jobspec_peek_dependencies(m->body.data, m->body.len, &deps, &n_deps) < 0 || !n_deps)
        return -1;
    int env = -1;
    for (size_t i = 0; i < n_deps && env == -1; i++)
        if (pep508_check(deps[i], strlen(deps[i]), why, whylen) < 0) env = -3;
    if (env == -1 && !pep440_all_met(self->io.packages(self->zygotes, zi), deps, n_deps)) {
        env = envs_request(self->envs, profile_find(m->service), deps, n_deps);
        if (env < 0) env = -2;
    }
    jobspec_free_names(deps, n_deps);
    return env;
}

/* A job with egress rules is granted its network as it goes to zygote zi (egress_link.h): the
 * zygote hears the secret just before the job. Without a grant it runs without network. */
static void s_send(slots_t *self, slot_t *s, int zi, const uint8_t *body, size_t len)
{
    job_egress_t e;
    char secret[EMSG_SECRET_LEN + 1];
    uint32_t listener = self->io.egress_listener ? self->io.egress_listener(self->zygotes, zi) : 0;
    if (self->egress && listener && jobspec_peek_egress(body, len, &e) == 0) {
        if (e.n_rules && egress_link_grant(self->egress, s->id, listener, s->tenant, &e,
                                           (long)s->wall_ms, secret) == 0) {
            self->io.send_egress(self->zygotes, zi, s->id, secret);
            s->egress = 1;
        }
        explicit_bzero(secret, sizeof secret);
        jobspec_free_egress(&e);
    }
    self->io.send_job(self->zygotes, zi, s->id, body, len);
}

static void s_send_waiting(slots_t *self, slot_t *s, int zi)
{
    s->zygote = zi;
    s_send(self, s, zi, s->body, s->body_len);
    s_drop_body(self, s);
}

/* A waiting job can go once its environment is built (or the profile has it all) and the
 * zygote serving it is up; it is answered when the environment cannot be had. */
static void s_dispatch_one(slots_t *self, slot_t *s)
{
    int env = s->env, ready, zi;
    if (strcmp(envs_key(self->envs, env), s->env_key) != 0) { /* forgotten meanwhile */
        uint8_t id[ID_BYTES];
        memcpy(id, s->id, ID_BYTES);
        s_answer(self, s, ST_REJECTED, "ExecutorRefused",
                 "this executor lost track of the job's dependency environment");
        claims_forget(self->claims, id); /* it did not run: a resubmission may */
        return;
    }
    switch (envs_state(self->envs, env)) {
    case ENV_BUILDING:
        return;
    case ENV_FAILED:
        s_answer(self, s, ST_ERROR, "DependencyError", envs_error(self->envs, env));
        return;
    case ENV_BASE:
        zi = self->io.pick(self->zygotes, s->service, &ready);
        if (zi >= 0 && ready) s_send_waiting(self, s, zi);
        return;
    case ENV_READY:
        zi = self->io.env_pick(self->zygotes, s->env_key, &ready);
        if (zi < 0)
            zi = self->io.env_start(self->zygotes, envs_profile(self->envs, env), s->env_key,
                                    envs_site(self->envs, env), envs_modules(self->envs, env));
        if (zi == -2)
            s_answer(self, s, ST_INTERNAL_ERROR, "SandboxError",
                     "the sandbox for the job's dependencies could not be started");
        else if (zi >= 0 && ready)
            s_send_waiting(self, s, zi);
        return;
    }
}

void slots_dispatch_waiting(slots_t *self)
{
    for (long i = 0; i < node_conf_jobs(self->conf) && self->n_waiting; i++)
        if (self->slot[i].zygote == SLOT_WAITING) s_dispatch_one(self, &self->slot[i]);
}

/* The job in slot s waits for environment env with a copy of its JobSpec. */
static void s_wait(slots_t *self, slot_t *s, int env, const worker_msg_t *m)
{
    s->zygote = SLOT_WAITING;
    s->env = env;
    snprintf(s->env_key, sizeof s->env_key, "%s", envs_key(self->envs, env));
    snprintf(s->service, sizeof s->service, "%s", m->service);
    s->body = xmalloc(m->body.len ? m->body.len : 1);
    memcpy(s->body, m->body.data, m->body.len);
    s->body_len = m->body.len;
    self->n_waiting++;
    s_dispatch_one(self, s);
}

/* ---- sessions ---------------------------------------------------------------------- */

long slots_mem_available_mb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

void slots_set_sessions(slots_t *self, node_sessions_t *sessions)
{
    self->sessions = sessions;
    self->ready_ids = xcalloc((size_t)self->conf->max_sessions, ID_BYTES);
    self->mem_free_mb = slots_mem_available_mb();
}

/* SESSIONS to every broker that is up (each routes jobs to this node's sessions): what changed,
 * with the free memory new sessions are placed by. Sent at once on a change (before the answer
 * of the job that made it), else once a second. */
static void s_send_sessions(slots_t *self, int always)
{
    node_sessions_changes_t ch;
    if (!self->sessions || !self->links) return;
    int changed = node_sessions_changes(self->sessions, &ch);
    if (!changed && !always) return;
    buf_t b;
    buf_init(&b);
    sessions_encode(self->mem_free_mb > 0 ? (uint32_t)self->mem_free_mb : 0,
                    (uint32_t)node_sessions_count(self->sessions),
                    (const uint8_t(*)[ID_BYTES])ch.up, ch.n_up,
                    (const uint8_t(*)[ID_BYTES])ch.down, ch.reasons, ch.n_down, &b);
    for (int i = 0; i < self->n_links; i++)
        if (self->io.link_up(self->links[i])) self->io.send_sessions(self->links[i], b.data, b.len);
    buf_free(&b);
    self->sessions_sent_ms = clock_mono_ms();
}

/* Idle timeouts and memory pressure (node_sessions.h decides), and SESSIONS once a second. */
void slots_session_tick(slots_t *self)
{
    node_sessions_end_t due[64];
    if (!self->sessions) return;
    self->mem_free_mb = slots_mem_available_mb();
    size_t k = self->sessions_leaving
                   ? node_sessions_leave(self->sessions, self->hibernate != NULL, due, 64)
                   : node_sessions_due(self->sessions, clock_mono_ms(), self->mem_free_mb, due, 64);
    for (size_t i = 0; i < k; i++) {
        char idstr[ID_STR_LEN + 1];
        id_format(due[i].id, idstr);
        if (due[i].what != SESSION_DUE_END && self->hibernate) {
            log_info("event=session_checkpoint session=%s what=%d reason=\"%s\"", idstr,
                     (int)due[i].what, due[i].reason);
            hibernate_begin(self->hibernate, &due[i]);
            continue;
        }
        log_info("event=session_ending session=%s reason=\"%s\"", idstr, due[i].reason);
        self->io.end_session(self->zygotes, due[i].zygote, due[i].id, due[i].reason);
    }
    s_send_sessions(self, clock_mono_ms() - self->sessions_sent_ms >= 1000);
}

/* A job on a session this node does not hold: answered at once (its RESULT returns the
 * credit), with why it ended when that is remembered. */
/* The answer to a job on a session this node does not hold (any more), into b. */
static void s_no_session_result(slots_t *self, const uint8_t sid[ID_BYTES], const char *tenant,
                                buf_t *b)
{
    const char *ended = self->sessions ? node_sessions_ended(self->sessions, sid, tenant) : NULL;
    char idstr[ID_STR_LEN + 1], msg[WIRE_MAX_REASON + 80];
    id_format(sid, idstr);
    if (ended)
        snprintf(msg, sizeof msg, SESSION_ENDED_FMT, idstr, ended);
    else
        snprintf(msg, sizeof msg, SESSION_UNKNOWN_FMT, idstr);
    result_t res;
    result_init(&res);
    res.status = ST_REJECTED;
    res.error.present = 1;
    res.error.type = ended ? "SessionEnded" : "SessionUnknown";
    res.error.message = msg;
    res.exit.reason = "rejected";
    res.session.present = 1;
    memcpy(res.session.id, sid, ID_BYTES);
    res.session.end_reason = (char *)(ended ? ended : "unknown session");
    result_encode(&res, b);
}

static void s_answer_no_session(slots_t *self, int link, const uint8_t job[ID_BYTES],
                                const route_t *r)
{
    buf_t b;
    buf_init(&b);
    s_no_session_result(self, r->session, r->tenant, &b);
    self->io.send_result(self->links[link], job, b.data, b.len, 1);
    buf_free(&b);
}

/* ---- a session's jobs, one at a time, in the order they came ------------------------------- */

/* 1 when a job on this session is running or queued here. */
static int s_session_taken(const slots_t *self, const uint8_t session[ID_BYTES])
{
    for (long i = 0; i < node_conf_jobs(self->conf); i++) {
        const slot_t *s = &self->slot[i];
        if (s->zygote != SLOT_FREE && s->has_session && !memcmp(s->session, session, ID_BYTES))
            return 1;
    }
    return 0;
}

/* A job on a session that is running another waits here, holding its slot and credit, rather
 * than being refused: answers on a session come in the order its requests came. Its JobSpec is
 * copied (zeroed when freed), as for a job waiting for its environment. */
static void s_queue(slots_t *self, slot_t *s, const worker_msg_t *m)
{
    s->zygote = SLOT_QUEUED;
    s->queued_seq = ++self->queued_seq;
    snprintf(s->service, sizeof s->service, "%s", m->service);
    snprintf(s->tenant, sizeof s->tenant, "%s", m->route.tenant);
    s->body = xmalloc(m->body.len ? m->body.len : 1);
    memcpy(s->body, m->body.data, m->body.len);
    s->body_len = m->body.len;
    self->n_waiting++;
}

/* The session's previous job was answered: its oldest queued one goes to the session's zygote,
 * or is answered here when the session is gone. */
static void s_session_next(slots_t *self, const uint8_t session[ID_BYTES])
{
    slot_t *next = NULL;
    for (long i = 0; i < node_conf_jobs(self->conf); i++) {
        slot_t *s = &self->slot[i];
        if (s->zygote == SLOT_QUEUED && !memcmp(s->session, session, ID_BYTES) &&
            (!next || s->queued_seq < next->queued_seq))
            next = s;
    }
    if (!next) return;
    node_session_t *ns = self->sessions ? node_sessions_of(self->sessions, session, next->tenant) : NULL;
    if (!ns || ns->ending) {
        buf_t b;
        buf_init(&b);
        s_no_session_result(self, session, next->tenant, &b);
        next->has_session = 0; /* answered for a session that is not there: nothing to free */
        s_end(self, next, b.data, b.len);
        buf_free(&b);
        s_session_next(self, session); /* the rest are answered the same way */
        return;
    }
    node_sessions_busy(self->sessions, session, 1, clock_mono_ms());
    next->zygote = ns->zygote;
    s_send(self, next, ns->zygote, next->body, next->body_len);
    s_drop_body(self, next);
}

/* The zygote for a job: the one holding its session, or the profile's; -2 when the job is
 * answered here already. */
static int s_zygote_for(slots_t *self, int link, const worker_msg_t *m, int *ready)
{
    const route_t *r = &m->route;
    if (r->has_session) {
        /* another tenant's session is answered like one that does not exist */
        node_session_t *ns =
            self->sessions ? node_sessions_of(self->sessions, r->session, r->tenant) : NULL;
        if (!ns || ns->ending) {
            s_answer_no_session(self, link, m->job_id, r);
            return -2;
        }
        *ready = 1;
        return ns->zygote; /* also a zygote being recycled: the session lives there */
    }
    if (r->has_new_session && (!self->sessions || node_sessions_full(self->sessions))) {
        char why[96];
        snprintf(why, sizeof why, "this executor holds its maximum of %ld sessions",
                 self->conf->max_sessions);
        self->io.send_simple(self->links[link], m->job_id, ST_REJECTED, "SessionLimit", why);
        return -2;
    }
    return self->io.pick(self->zygotes, m->service, ready);
}

/* A zygote's news of a session: the book, the metrics, and the brokers at once. */
static void s_on_session(void *arg, int zi, const zmsg_t *msg)
{
    slots_t *self = arg;
    const zmsg_session_t *z = &msg->session;
    if (!self->sessions) return;
    switch (z->event) {
    case ZS_UP:
        node_sessions_up(self->sessions, msg->id, zi, z->tenant, (long)z->idle_timeout_s,
                         (long)z->memory_mb, (long)z->retention_s, clock_mono_ms());
        self->metrics->sessions_started++;
        break;
    case ZS_DOWN:
        if (node_sessions_get(self->sessions, msg->id))
            exec_metrics_session_end(self->metrics, z->reason);
        node_sessions_down(self->sessions, msg->id, z->reason);
        s_session_next(self, msg->id); /* jobs that waited for its checkpoint hear why it ended */
        break;
    case ZS_MEMORY:
        node_sessions_memory(self->sessions, msg->id, z->memory_kb);
        break;
    }
    self->metrics->sessions = (long)node_sessions_count(self->sessions);
    self->metrics->session_memory_kb = node_sessions_memory_kb(self->sessions);
    s_send_sessions(self, 0);
}

/* ---- from the brokers ------------------------------------------------------------------------ */

static void s_fill_ready(void *arg, ready_t *r, const uint8_t (**ids)[ID_BYTES], size_t *n_ids)
{
    slots_t *self = arg;
    long free_mb = slots_mem_available_mb();
    r->mem_free_mb = free_mb > 0 ? (uint32_t)free_mb : 0;
    r->max_sessions = (uint32_t)self->conf->max_sessions;
    /* every broker — one that restarted, or a second one — learns here where each session is,
     * so a session's jobs reach this node through whichever broker a front-end uses */
    *n_ids = self->sessions ? node_sessions_ids(self->sessions, self->ready_ids,
                                                (size_t)self->conf->max_sessions)
                            : 0;
    *ids = (const uint8_t(*)[ID_BYTES])self->ready_ids;
    snprintf(r->node, sizeof r->node, "%s", self->conf->node_id);
    r->n_services = self->io.services(self->zygotes, 1, r->services, WIRE_MAX_SERVICES);
    r->slots = (uint32_t)node_conf_jobs(self->conf);
    r->reserve = (uint32_t)self->conf->reserve_slots;
    snprintf(r->python, sizeof r->python, "%s", self->io.python(self->zygotes));
    snprintf(r->layers, sizeof r->layers, "%s", self->layers);
}

static void s_on_up(void *arg, int link)
{
    slots_t *self = arg;
    credits_link_up(self->credits, link);
    /* a broker that (re)registers while the node drains hears LEAVING after its READY */
    if (self->draining && self->io.send_leaving) {
        self->leaving.running = credits_busy(self->credits);
        self->io.send_leaving(self->links[link], &self->leaving);
    }
}

static void s_on_down(void *arg, int link)
{
    credits_link_down(((slots_t *)arg)->credits, link);
}

/* A wall-clock deadline as a monotonic time for the claims; 0 = none. */
static uint64_t s_expires(const route_t *route)
{
    uint64_t wall = clock_wall_ms(), now = clock_mono_ms();
    return route->deadline_ms > wall ? now + (route->deadline_ms - wall) : 0;
}

/* A JOB this node does not run: it returns its credit (PROTOCOL.md §3) and says why. */
static void s_refuse(slots_t *self, int link, const worker_msg_t *m, status_t st, const char *type,
                     const char *why)
{
    char hex[ID_STR_LEN + 1];
    id_format(m->job_id, hex);
    log_warn("event=job_refused job=%s service=%s broker=%d reason=\"%s\"", hex, m->service, link,
             why);
    self->metrics->refused++;
    self->io.send_simple(self->links[link], m->job_id, st, type, why);
}

static void s_on_job(void *arg, int link, const worker_msg_t *m)
{
    slots_t *self = arg;
    switch (claims_on_job(self->claims, m->job_id, link, s_expires(&m->route), clock_mono_ms())) {
    case CLAIM_ATTACH: /* it runs here already: its answer will come; the credit goes back */
        self->metrics->duplicates++;
        self->io.send_credit(self->links[link], 1);
        return;
    case CLAIM_REFUSE_DONE:
        self->metrics->duplicates++;
        s_refuse(self, link, m, ST_LOST, "DuplicateJob",
                 "this job already ran on this executor; its answer went to the broker that "
                 "sent it first");
        return;
    case CLAIM_REFUSE_OWNED:
        self->metrics->duplicates++;
        s_refuse(self, link, m, ST_LOST, "DuplicateJob",
                 "this job was resubmitted to another broker, which runs it");
        return;
    case CLAIM_RUN:
        break;
    }
    int ready = 0;
    int zi = s_zygote_for(self, link, m, &ready);
    if (zi == -2) {
        claims_forget(self->claims, m->job_id); /* it did not run: a resubmission may */
        return;
    }
    slot_t *s = s_slot_free(self);
    int credit = credits_can_start(self->credits, link);
    if (zi < 0 || !s || !ready || !credit) {
        claims_forget(self->claims, m->job_id); /* it did not run: a resubmission may */
        s_refuse(self, link, m, zi >= 0 && s && credit ? ST_INTERNAL_ERROR : ST_REJECTED,
                 "ExecutorRefused",
                 zi < 0          ? "this executor does not serve the service"
                 : !s || !credit ? "no free slot (the broker sent more jobs than credits)"
                                 : "the profile's sandbox is restarting");
        return;
    }
    char why[320];
    int env = s_env_of(self, m, zi, why, sizeof why);
    if (env == -3) {
        claims_forget(self->claims, m->job_id);
        s_refuse(self, link, m, ST_ERROR, "DependencyError", why);
        return;
    }
    if (env >= 0 && (m->route.has_session || m->route.has_new_session)) {
        /* the session's process is its profile's zygote's child: no other site */
        claims_forget(self->claims, m->job_id);
        s_refuse(self, link, m, ST_REJECTED, "DependencyError", SESSION_DEPENDENCIES_MSG);
        return;
    }
    if (env == -2) {
        claims_forget(self->claims, m->job_id);
        s_refuse(self, link, m, ST_REJECTED, "ExecutorRefused",
                 "too many dependency environments on this executor");
        return;
    }
    node_session_t *ns = m->route.has_session && self->sessions
                             ? node_sessions_get(self->sessions, m->route.session)
                             : NULL;
    /* behind its earlier jobs, or its checkpoint being taken (hibernate.h) */
    int behind = m->route.has_session &&
                 (s_session_taken(self, m->route.session) || (ns && ns->checkpointing));
    credits_start(self->credits, link);
    memcpy(s->id, m->job_id, ID_BYTES);
    s->link = link;
    snprintf(s->tenant, sizeof s->tenant, "%s", m->route.tenant);
    uint64_t wall = clock_wall_ms();
    s->wall_ms = m->route.deadline_ms > wall ? m->route.deadline_ms - wall : 0;
    s->has_session = m->route.has_session;
    if (s->has_session) {
        memcpy(s->session, m->route.session, ID_BYTES);
        node_sessions_busy(self->sessions, s->session, 1, clock_mono_ms());
    }
    self->metrics->busy = credits_busy(self->credits);
    if (behind) {
        s_queue(self, s, m);
        return;
    }
    if (env >= 0) {
        s_wait(self, s, env, m);
        return;
    }
    s->zygote = zi;
    s_send(self, s, zi, m->body.data, m->body.len);
}

static void s_on_cancel(void *arg, int link, const uint8_t id[ID_BYTES])
{
    (void)link; /* a broker the job was attached to may cancel it too */
    slots_t *self = arg;
    slot_t *s = s_slot_of(self, id);
    if (s && (s->zygote == SLOT_WAITING || s->zygote == SLOT_QUEUED)) /* never reached a zygote */
        s_answer(self, s, ST_CANCELLED, "Cancelled", "execution was cancelled");
    else if (s)
        self->io.cancel(self->zygotes, s->zygote, id);
}

static void s_on_want(void *arg, int link, uint32_t n)
{
    credits_want(((slots_t *)arg)->credits, link, n);
}

static void s_on_release(void *arg, int link, uint32_t n)
{
    credits_released(((slots_t *)arg)->credits, link, n);
}

static void s_on_probe(void *arg, int link, const worker_msg_t *m)
{
    slots_t *self = arg;
    held_t held =
        claims_on_probe(self->claims, m->job_id, link, s_expires(&m->route), clock_mono_ms());
    self->metrics->probes++;
    self->io.send_held(self->links[link], m->job_id, (unsigned)held);
}

broker_link_hooks_t slots_link_hooks(slots_t *self)
{
    return (broker_link_hooks_t){s_fill_ready, s_on_up,      s_on_down,  s_on_job, s_on_cancel,
                                 s_on_want,    s_on_release, s_on_probe, self};
}

/* ---- from the zygotes ------------------------------------------------------------------------ */

static int s_on_result(void *arg, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    slots_t *self = arg;
    slot_t *s = s_slot_of(self, id);
    if (!s && self->hibernate && hibernate_on_result(self->hibernate, id, body, len)) return 1;
    /* answered already (its zygote was given up on, or it never reached one), or unknown */
    if (!s || s->zygote == SLOT_WAITING) return 0;
    if (s->egress) /* its account first: s_on_egress_done sends it on */
        egress_link_finish(self->egress, id, body, len);
    else
        s_end(self, s, body, len);
    return 1;
}

static void s_on_progress(void *arg, const uint8_t id[ID_BYTES], const uint8_t *chunk, size_t len)
{
    slots_t *self = arg;
    slot_t *s = s_slot_of(self, id);
    if (s && s->zygote >= 0) self->io.send_progress(self->links[s->link], id, chunk, len);
}

/* Every job the zygote held gets its one answer now. */
static void s_on_zygote_down(void *arg, int zi)
{
    slots_t *self = arg;
    if (self->hibernate) hibernate_zygote_down(self->hibernate, zi);
    if (self->sessions) { /* its sessions died with it */
        node_sessions_zygote_down(self->sessions, zi,
                                  "lost: the executor's sandbox process holding it died");
        self->metrics->sessions = (long)node_sessions_count(self->sessions);
        s_send_sessions(self, 0);
    }
    for (long i = 0; i < node_conf_jobs(self->conf); i++)
        if (self->slot[i].zygote == zi)
            s_answer(self, &self->slot[i], ST_INTERNAL_ERROR, "SandboxCrashed",
                     "the executor's sandbox process died while running this job");
}

/* An environment's zygote is gone for good: what waited for it is answered with why. */
static void s_on_env_down(void *arg, const char *key, const char *why)
{
    slots_t *self = arg;
    char msg[700];
    snprintf(msg, sizeof msg, "the job's dependency environment could not be loaded: %s", why);
    for (long i = 0; i < node_conf_jobs(self->conf); i++)
        if (self->slot[i].zygote == SLOT_WAITING && !strcmp(self->slot[i].env_key, key))
            s_answer(self, &self->slot[i], ST_ERROR, "DependencyError", msg);
}

static uint32_t s_on_egress_listener(void *arg, int fd)
{
    return egress_link_listen(((slots_t *)arg)->egress, fd);
}

static void s_on_egress_gone(void *arg, uint32_t listener)
{
    egress_link_unlisten(((slots_t *)arg)->egress, listener);
}

zygotes_hooks_t slots_zygote_hooks(slots_t *self)
{
    return (zygotes_hooks_t){s_on_result,  s_on_progress,        s_on_zygote_down,
                             s_on_session, s_on_env_down,        s_on_egress_listener,
                             s_on_egress_gone, self};
}

/* ---- from the egress link -------------------------------------------------------------------- */

/* A granted job's Result, with its account: it goes on now. */
static void s_on_egress_done(void *arg, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    slots_t *self = arg;
    slot_t *s = s_slot_of(self, id);
    if (!s || !s->egress || s->zygote < 0) return; /* answered meanwhile (its zygote died) */
    s->egress = 0;
    s_end(self, s, body, len);
}

static void s_on_egress_over_cap(void *arg, const uint8_t id[ID_BYTES])
{
    slots_t *self = arg;
    slot_t *s = s_slot_of(self, id);
    if (s && s->zygote >= 0 && self->io.egress_stop) self->io.egress_stop(self->zygotes, s->zygote, id);
}

egress_link_hooks_t slots_egress_hooks(slots_t *self)
{
    return (egress_link_hooks_t){s_on_egress_done, s_on_egress_over_cap, self};
}

void slots_set_egress(slots_t *self, egress_link_t *egress)
{
    self->egress = egress;
}

/* ---- hibernation (hibernate.h) ---------------------------------------------------------------- */

static void h_send_job(void *arg, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                       size_t len)
{
    slots_t *self = arg;
    self->io.send_job(self->zygotes, zi, id, body, len);
}

static void h_end_session(void *arg, int zi, const uint8_t id[ID_BYTES], const char *reason)
{
    slots_t *self = arg;
    self->io.end_session(self->zygotes, zi, id, reason);
}

static int h_waiting(void *arg, const uint8_t session[ID_BYTES])
{
    return s_session_taken(arg, session);
}

static void h_release(void *arg, const uint8_t session[ID_BYTES])
{
    slots_t *self = arg;
    if (!s_session_taken(self, session)) return;
    /* the oldest waiting job goes (node_sessions_busy marks it busy): its answer releases
     * the next, as for any session job */
    s_session_next(self, session);
}

static const char *h_service(void *arg, int zi)
{
    slots_t *self = arg;
    return self->io.profile ? self->io.profile(self->zygotes, zi) : "";
}

void slots_hibernate_io(slots_t *self, void *io)
{
    *(hibernate_io_t *)io =
        (hibernate_io_t){h_send_job, h_end_session, h_waiting, h_release, h_service, self};
}

/* The drain hook (slots_set_drain_hook): a draining node checkpoints and frees its sessions, and
 * has drained once none is left and no checkpoint is still being written. */
static void s_drain_sessions(void *arg, node_sessions_t *sessions)
{
    (void)sessions;
    slots_sessions_leave(arg);
}

static int s_sessions_left(void *arg)
{
    return slots_sessions_leave(arg); /* idle ones not yet taken go too (it is idempotent) */
}

void slots_set_hibernate(slots_t *self, hibernate_t *hibernate)
{
    self->hibernate = hibernate;
    if (hibernate)
        slots_set_drain_hook(self, &(slots_drain_hook_t){s_drain_sessions, s_sessions_left, self});
}

int slots_sessions_leave(slots_t *self)
{
    self->sessions_leaving = 1;
    if (!self->sessions) return 0;
    slots_session_tick(self); /* the idle ones now; the busy ones once their cell is answered */
    return node_sessions_count(self->sessions) > 0 ||
           (self->hibernate && hibernate_pending(self->hibernate) > 0);
}

/* ---- draining ------------------------------------------------------------------------------- */

void slots_set_drain_hook(slots_t *self, const slots_drain_hook_t *hook)
{
    self->drain_hook = *hook;
}

void slots_drain(slots_t *self, const char *reason, uint32_t grace_ms)
{
    if (self->draining) return;
    self->draining = 1;
    self->leaving.grace_ms = grace_ms;
    self->leaving.running = credits_busy(self->credits);
    snprintf(self->leaving.reason, sizeof self->leaving.reason, "%s", reason);
    for (int i = 0; i < self->n_links; i++) /* LEAVING first: each answers with RELEASE */
        if (self->io.link_up(self->links[i]) && self->io.send_leaving)
            self->io.send_leaving(self->links[i], &self->leaving);
    credits_drain(self->credits); /* and RECLAIM, for a broker that does not know LEAVING */
    if (self->drain_hook.begin) self->drain_hook.begin(self->drain_hook.arg, self->sessions);
}

int slots_draining(const slots_t *self)
{
    return self->draining;
}

int slots_drained(const slots_t *self)
{
    return self->draining && credits_drained(self->credits) &&
           !(self->drain_hook.busy && self->drain_hook.busy(self->drain_hook.arg));
}

long slots_running(const slots_t *self)
{
    return self->credits ? (long)credits_busy(self->credits) : 0;
}
