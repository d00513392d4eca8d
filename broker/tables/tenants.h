/* broker/tables/tenants.h — per-tenant counts across every service: what the per-tenant queue cap
 * and the in-flight quota (route.max_inflight, the tenant's concurrency quota) are checked
 * against. A tenant exists here only while it has jobs queued or in flight, so the table is
 * bounded by the jobs the broker holds, whatever names clients send. */
#ifndef SP_TENANTS_H
#define SP_TENANTS_H
#include <stddef.h>
#include <stdint.h>

struct tenant {
    char name[65];
    size_t queued;         /* jobs waiting, all services */
    size_t inflight;       /* jobs leased to executors */
    uint32_t max_inflight; /* the quota the latest SUBMIT carried; 0 = unlimited */
    int parked;            /* some queue parked its FIFO at the quota: unpark when it drops */
};
typedef struct tenant tenant_t;
typedef struct tenants tenants_t;

tenants_t *tenants_new(void);
void tenants_destroy(tenants_t **self_p);
tenant_t *tenants_get(tenants_t *self, const char *name);        /* created on first use */
tenant_t *tenants_find(const tenants_t *self, const char *name); /* NULL when idle */
void tenants_release(tenants_t *self, tenant_t *t);              /* frees it when idle */
size_t tenants_count(const tenants_t *self);
/* 1 when the tenant may start another job now. */
int tenant_may_run(const tenant_t *t);

#endif
