/* mcp-frontend/farm/served.c — see served.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/render/proftext.h"
#include "served.h"

struct served {
    loop_t *loop;
    store_t *store;
    served_conf_t conf;
    uint64_t timer;
    int reading;   /* a read is in flight: at most one */
    uint32_t mask; /* as last read; 0 not known */
    served_stats_t stats;
};

uint32_t served_parse(const char *const *names, const char *const *values, size_t n,
                      uint64_t now_ms, long fresh_ms)
{
    uint32_t mask = 0;
    for (size_t k = 0; k < n; k++) {
        const profile_t *p = profile_find(names[k]);
        size_t i = p ? (size_t)(p - profiles) : 32;
        if (i >= 32) continue; /* a profile this front-end does not know: not its to offer */
        json_t *entry = json_loads(values[k], 0, NULL);
        json_t *upd = json_object_get(entry, "updated_ms");
        /* executors' clocks may run ahead of ours: a field from the future is fresh */
        if (json_is_integer(upd) &&
            (json_int_t)now_ms - json_integer_value(upd) < (json_int_t)fresh_ms)
            mask |= 1u << i;
        json_decref(entry);
    }
    return mask;
}

static void s_set(served_t *self, uint32_t mask)
{
    if (mask == self->mask) return;
    char was[512], now[512];
    proftext_join(was, sizeof was, ",", NULL);
    self->mask = mask;
    self->stats.changes++;
    proftext_serve(mask);
    proftext_join(now, sizeof now, ",", NULL);
    log_info("event=served_profiles_changed was=%s now=%s known=%d", was, now, mask != 0);
}

static void s_on_profiles(void *arg, redisReply *r)
{
    served_t *self = arg;
    self->reading = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY) return; /* unreadable: the last view stands */
    self->stats.reads++;
    size_t n = r->elements / 2;
    const char **names = xcalloc(n + 1, sizeof *names), **values = xcalloc(n + 1, sizeof *values);
    size_t m = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        names[m] = k->str;
        values[m++] = v->str;
    }
    s_set(self, served_parse(names, values, m, clock_wall_ms(), self->conf.fresh_ms));
    free(names);
    free(values);
}

static void s_read(served_t *self)
{
    if (self->reading) return;
    if (store_queryf(self->store, s_on_profiles, self, "HGETALL sp:profiles") == 0)
        self->reading = 1;
}

static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    s_read(arg);
}

static void s_on_connect(void *arg, store_t *store)
{
    (void)store;
    s_read(arg);
}

served_t *served_new(loop_t *loop, store_t *store, const served_conf_t *conf)
{
    served_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store = store;
    self->conf = *conf;
    assert(conf->refresh_ms > 0 && conf->fresh_ms > 0);
    store_on_connect(store, s_on_connect, self);
    self->timer = loop_timer_add(loop, (uint64_t)conf->refresh_ms, (uint64_t)conf->refresh_ms,
                                 s_on_timer, self);
    return self;
}

void served_destroy(served_t **self_p)
{
    served_t *self = *self_p;
    if (!self) return;
    /* a read in flight is answered (NULL) when the store goes, which is destroyed first */
    assert(!self->reading);
    loop_timer_cancel(self->loop, self->timer);
    free(self);
    *self_p = NULL;
}

uint32_t served_mask(const served_t *self)
{
    return self->mask;
}

int served_has(const served_t *self, const profile_t *p)
{
    size_t i = (size_t)(p - profiles);
    return !self->mask || (i < 32 && (self->mask >> i) & 1u);
}

const served_stats_t *served_stats(const served_t *self)
{
    return &self->stats;
}
