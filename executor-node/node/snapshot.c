/* executor-node/node/snapshot.c — see snapshot.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_pub.h"
#include "proto/wire.h"
#include "snapshot.h"

struct snapshot {
    const node_conf_t *conf;
    const zygotes_t *zygotes;
    const exec_metrics_t *metrics;
    metrics_pub_t *node;     /* sp:metrics:executor:{node} */
    metrics_pub_t *profiles; /* sp:profiles */
};

/* The node's hash, for `snakepit status` and get_sandbox_info. */
static void s_fill_node(void *arg, metrics_pub_t *pub)
{
    const snapshot_t *self = arg;
    const exec_metrics_t *m = self->metrics;
    uint64_t jobs = 0, violations = 0, forks = 0, restarts = 0;
    for (int i = 0; i < m->n_profiles; i++) {
        const profile_stats_t *p = &m->profiles[i];
        for (int s = 0; s < ST__COUNT; s++) jobs += p->jobs[s];
        violations += p->jobs[ST_SECURITY_VIOLATION];
        forks += p->forks;
        restarts += p->zygote_restarts;
    }
    char names[WIRE_MAX_SERVICES][65], services[256] = "";
    int n = zygotes_services(self->zygotes, 0, names, WIRE_MAX_SERVICES);
    size_t used = 0;
    for (int i = 0; i < n; i++)
        used +=
            (size_t)snprintf(services + used, used < sizeof services ? sizeof services - used : 0,
                             "%s%s", used ? "," : "", names[i]);
    metrics_pub_field(pub, "node", "%s", self->conf->node_id);
    metrics_pub_field(pub, "services", "%s", services);
    /* like the broker's: slots and free apart from the reserve, which busy may include */
    metrics_pub_field(pub, "slots", "%ld", self->conf->slots);
    metrics_pub_field(pub, "reserve_slots", "%ld", self->conf->reserve_slots);
    metrics_pub_field(pub, "busy", "%ld", m->busy);
    metrics_pub_field(pub, "free", "%ld", m->busy < self->conf->slots ? self->conf->slots - m->busy : 0);
    metrics_pub_field(pub, "python", "%s", zygotes_python(self->zygotes));
    metrics_pub_field(pub, "layers", "%s", m->layers);
    buf_t packages;
    buf_init(&packages);
    zygotes_profiles_json(self->zygotes, NULL, &packages);
    metrics_pub_field(pub, "profiles", "%s", (const char *)packages.data);
    buf_free(&packages);
    metrics_pub_field(pub, "jobs", "%llu", (unsigned long long)jobs);
    metrics_pub_field(pub, "violations", "%llu", (unsigned long long)violations);
    metrics_pub_field(pub, "forks", "%llu", (unsigned long long)forks);
    metrics_pub_field(pub, "zygote_restarts", "%llu", (unsigned long long)restarts);
    metrics_pub_field(pub, "broker_connected", "%d", m->broker_connected);
    /* what was asked for and is not served (why: the log and /metrics), and the drain */
    char unserved[512] = "";
    size_t u = 0;
    for (int i = 0; i < m->n_asked; i++)
        if (!m->asked[i].served)
            u += (size_t)snprintf(unserved + u, u < sizeof unserved ? sizeof unserved - u : 0,
                                  "%s%s", u ? "," : "", m->asked[i].name);
    metrics_pub_field(pub, "unserved", "%s", unserved);
    metrics_pub_field(pub, "draining", "%d", m->drain_since_s > 0);
    metrics_pub_field(pub, "ts_ms", "%llu",
                      (unsigned long long)clock_wall_ms()); /* as the broker's */
}

/* sp:profiles, one field per profile, shared by every node: nodes of one install agree; the
 * freshest wins. Only profiles whose zygote is warm here have a field; a draining node writes
 * none, so a profile only it served goes stale there (the front-ends stop offering it). */
static void s_fill_profiles(void *arg, metrics_pub_t *pub)
{
    const snapshot_t *self = arg;
    if (self->metrics->drain_since_s > 0) return;
    for (size_t i = 0; i < n_profiles; i++) {
        buf_t b;
        buf_init(&b);
        zygotes_profiles_json(self->zygotes, &profiles[i], &b);
        if (b.len) metrics_pub_field(pub, profiles[i].name, "%s", (const char *)b.data);
        buf_free(&b);
    }
}

snapshot_t *snapshot_new(loop_t *loop, const node_conf_t *conf, const zygotes_t *zygotes,
                         const exec_metrics_t *metrics)
{
    snapshot_t *self = xcalloc(1, sizeof *self);
    char key[160], err[512];
    self->conf = conf;
    self->zygotes = zygotes;
    self->metrics = metrics;
    snprintf(key, sizeof key, "sp:metrics:executor:%s", conf->node_id);
    self->node =
        metrics_pub_new(loop, conf->redis, key, 1000, 10, s_fill_node, self, err, sizeof err);
    if (!self->node) log_warn("event=snapshot_disabled error=\"%s\"", err);
    self->profiles = metrics_pub_new(loop, conf->redis, "sp:profiles", 5000, 60, s_fill_profiles,
                                     self, err, sizeof err);
    if (!self->profiles) log_warn("event=profiles_snapshot_disabled error=\"%s\"", err);
    return self;
}

void snapshot_destroy(snapshot_t **self_p)
{
    assert(self_p);
    snapshot_t *self = *self_p;
    if (!self) return;
    metrics_pub_destroy(&self->node);
    metrics_pub_destroy(&self->profiles);
    free(self);
    *self_p = NULL;
}
