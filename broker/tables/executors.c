/* broker/tables/executors.c — see executors.h. Executors sit in an array for picking and iteration
 * and in a keymap by routing id for message lookup; picking scans the array, which at the
 * hundreds of executors one broker feeds costs less than keeping a heap ordered under
 * constant credit changes. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "executors.h"
#include "keymap.h"

struct executors {
    executor_t **all;
    size_t n, max;
    unsigned quantum; /* for each pinned queue */
    keymap_t *by_identity;
    uint64_t stamp; /* dispatch counter behind last_used */
};

executors_t *executors_new(size_t max, unsigned quantum)
{
    executors_t *self = xcalloc(1, sizeof *self);
    self->max = max;
    self->quantum = quantum;
    self->all = xcalloc(max, sizeof *self->all);
    self->by_identity = keymap_new();
    return self;
}

void executors_destroy(executors_t **self_p)
{
    assert(self_p);
    executors_t *self = *self_p;
    if (!self) return;
    while (self->n) {
        executor_t *ex = self->all[self->n - 1];
        executors_remove(self, &ex);
    }
    free(self->all);
    keymap_destroy(&self->by_identity);
    free(self);
    *self_p = NULL;
}

executor_t *executors_add(executors_t *self, const void *identity, size_t len, const ready_t *ready,
                          uint64_t service_mask, uint64_t now_ms)
{
    if (self->n >= self->max || len == 0 || len > EXECUTOR_MAX_IDENTITY) return NULL;
    if (keymap_get(self->by_identity, identity, len)) return NULL;
    executor_t *ex = xcalloc(1, sizeof *ex);
    memcpy(ex->identity, identity, len);
    ex->identity_len = len;
    snprintf(ex->node, sizeof ex->node, "%s", ready->node);
    for (int i = 0; i < ready->n_services && i < WIRE_MAX_SERVICES; i++)
        snprintf(ex->services[ex->n_services++], sizeof ex->services[0], "%s", ready->services[i]);
    snprintf(ex->python, sizeof ex->python, "%s", ready->python);
    ex->service_mask = service_mask;
    ex->slots = ready->slots;
    ex->reserve = ready->reserve;
    ex->mem_free_mb = ready->mem_free_mb;
    ex->max_sessions = ready->max_sessions;
    ex->pinned = queue_new(self->quantum);
    ex->registered_ms = ex->last_seen_ms = now_ms;
    ex->last_used = 0; /* never used: first in line among equals */
    ex->index = self->n;
    self->all[self->n++] = ex;
    keymap_put(self->by_identity, ex->identity, len, ex);
    return ex;
}

executor_t *executors_get(const executors_t *self, const void *identity, size_t len)
{
    return keymap_get(self->by_identity, identity, len);
}

executor_t *executors_find_node(const executors_t *self, const char *node)
{
    for (size_t i = 0; i < self->n; i++)
        if (strcmp(self->all[i]->node, node) == 0) return self->all[i];
    return NULL;
}

void executors_remove(executors_t *self, executor_t **ex_p)
{
    executor_t *ex = *ex_p;
    if (!ex) return;
    assert(ex->n_leases == 0 && !ex->leases);
    queue_destroy(&ex->pinned);
    keymap_del(self->by_identity, ex->identity, ex->identity_len);
    size_t i = ex->index;
    assert(i < self->n && self->all[i] == ex);
    self->all[i] = self->all[--self->n];
    self->all[i]->index = i;
    free(ex);
    *ex_p = NULL;
}

uint32_t executor_open_credit(const executor_t *ex)
{
    if (ex->draining) return 0;
    uint32_t kept = ex->reserve > ex->reserve_used ? ex->reserve - ex->reserve_used : 0;
    return ex->credit > kept ? ex->credit - kept : 0;
}

static uint32_t s_credit(const executor_t *ex, int reserve)
{
    return reserve ? ex->credit : executor_open_credit(ex);
}

executor_t *executors_pick(const executors_t *self, unsigned service, int reserve)
{
    uint64_t bit = 1ULL << service;
    executor_t *best = NULL;
    uint32_t best_credit = 0;
    for (size_t i = 0; i < self->n; i++) {
        executor_t *ex = self->all[i];
        uint32_t credit = s_credit(ex, reserve);
        if (!credit || !(ex->service_mask & bit) || ex->draining) continue;
        if (!best || credit > best_credit ||
            (credit == best_credit && ex->last_used < best->last_used)) {
            best = ex;
            best_credit = credit;
        }
    }
    return best;
}

executor_t *executors_pick_for_session(const executors_t *self, unsigned service, int reserve)
{
    uint64_t bit = 1ULL << service;
    executor_t *best = NULL;
    uint32_t best_credit = 0;
    for (size_t i = 0; i < self->n; i++) {
        executor_t *ex = self->all[i];
        uint32_t credit = s_credit(ex, reserve);
        if (!credit || !(ex->service_mask & bit) || ex->sessions >= ex->max_sessions ||
            ex->draining)
            continue;
        uint32_t mem = ex->mem_free_mb / 256, best_mem = best ? best->mem_free_mb / 256 : 0;
        if (!best || mem > best_mem ||
            (mem == best_mem && (credit > best_credit ||
                                 (credit == best_credit && ex->last_used < best->last_used)))) {
            best = ex;
            best_credit = credit;
        }
    }
    return best;
}

int executors_charge(executors_t *self, executor_t *ex)
{
    assert(ex->credit > 0);
    int reserved = executor_open_credit(ex) == 0;
    ex->credit--;
    ex->reserve_used += (uint32_t)reserved;
    ex->last_used = ++self->stamp;
    return reserved;
}

void executors_unreserve(executor_t *ex)
{
    assert(ex->reserve_used > 0);
    ex->reserve_used--;
}

void executors_refund(executor_t *ex, uint32_t n)
{
    if (ex->draining) return; /* leaving: it takes no job, so it holds no credit */
    uint64_t c = (uint64_t)ex->credit + n;
    ex->credit = c > ex->slots ? ex->slots : (uint32_t)c;
}

uint32_t executors_drain(executor_t *ex, uint64_t now_ms, uint32_t grace_ms)
{
    if (ex->draining) return 0;
    uint32_t dropped = ex->credit;
    ex->credit = 0;
    ex->draining = 1;
    ex->drain_since_ms = now_ms;
    ex->drain_grace_ms = grace_ms;
    return dropped;
}

size_t executors_count(const executors_t *self)
{
    return self->n;
}

executor_t *executors_at(const executors_t *self, size_t i)
{
    return i < self->n ? self->all[i] : NULL;
}
