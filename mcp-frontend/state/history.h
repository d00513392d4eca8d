/* mcp-frontend/state/history.h — reading execution records back (records.h says what is written):
 * get_execution, list_executions, the sandbox://executions/{id} resource and the tasks
 * methods all go through record_fetch, which answers "not found" for another tenant's record
 * exactly as for a missing one, so ids cannot be probed across tenants. */
#ifndef SP_FE_HISTORY_H
#define SP_FE_HISTORY_H
#include <jansson.h>

#include "store.h"
#include "tenants.h"

typedef enum { FETCH_OK, FETCH_NOT_FOUND, FETCH_UNAVAILABLE } fetch_status_t;

/* fields: the record's hash as a JSON object of strings (NULL unless FETCH_OK). */
typedef void(record_fn)(void *arg, fetch_status_t st, json_t *fields);

/* Looks up sp:exec:<id> for tenant. fn is called exactly once (possibly before this returns,
 * with FETCH_UNAVAILABLE when Redis is unreachable or FETCH_NOT_FOUND for a malformed id). */
void record_fetch(store_t *store, const char *id, const tenant_t *tenant, record_fn *fn, void *arg);

/* The public view of a record: what get_execution and the resource return. Steals nothing. */
json_t *record_view(const char *id, const json_t *fields);
/* A JSON integer from a numeric string field, or null. */
json_t *field_int(const json_t *fields, const char *name);

#endif
