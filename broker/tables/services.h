/* broker/tables/services.h — the services (sandbox profiles) the broker routes: one queue each,
 * how many executors serve it and with how many slots, and its counters. A service is
 * created when an executor first advertises it (or, during the start-up grace, when a client
 * submits to a known profile) and is never removed, so its counters stay monotonic for
 * Prometheus; their number is capped at SERVICES_MAX, the width of an executor's service
 * mask. */
#ifndef SP_SERVICES_H
#define SP_SERVICES_H
#include <stddef.h>
#include <stdint.h>

#include "queue.h"
#include "tenants.h"

#define SERVICES_MAX 64

struct service {
    char name[65];
    unsigned index; /* bit number in executor service masks */
    queue_t *queue;
    size_t executors;     /* registered executors serving it */
    size_t slots;         /* their declared slots */
    size_t inflight;      /* its jobs leased to executors */
    uint64_t orphaned_ms; /* monotonic: since when no executor serves it (while executors == 0) */
    int dirty;            /* dispatch should look at it: new job, new credit, unparked tenant */
    struct {
        uint64_t submitted, dispatched, completed, requeued, lost, cancelled, abandoned;
        uint64_t expired_queued, expired_leased;
    } count;
};
typedef struct service service_t;
typedef struct services services_t;

services_t *services_new(unsigned quantum);
void services_destroy(services_t **self_p); /* queues must be empty */
service_t *services_get(const services_t *self, const char *name);
service_t *services_add(services_t *self, const char *name, uint64_t orphaned_ms); /* NULL: full */
size_t services_count(const services_t *self);
service_t *services_at(const services_t *self, size_t i); /* i == index */
/* Marks the services whose bits are set in mask for the next dispatch pass. */
void services_mark_dirty(services_t *self, uint64_t mask);
/* The tenant may run again: every queue returns its parked FIFO to the round. */
void services_unpark(services_t *self, tenant_t *t);

#endif
