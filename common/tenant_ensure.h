/* common/tenant_ensure.h — (re)creating a tenant a component owns: the farm's `local` tenant,
 * which `snakepit up` creates with the key in STATE_DIR/local.key and which the front-end it
 * starts re-creates whenever it connects to a Redis that has lost it (a private Redis restarted
 * without its files, an external one flushed or failed over to an empty replica).
 *
 * One idempotent Lua script does it, so that the CLI (blocking) and the front-end (through its
 * write journal, which may replay it) do exactly the same: quotas are written only when the
 * tenant's hash is missing (an operator's `snakepit tenant set local …` survives), the key
 * mapping and the tenant set always. It writes nothing (and so adds nothing to the AOF) when
 * all is in place, and returns 0 then, 1 when it had to re-create something. */
#ifndef SP_TENANT_ENSURE_H
#define SP_TENANT_ENSURE_H
#include <stddef.h>
#include <stdint.h>

#define TENANT_ENSURE_NKEYS 3
#define TENANT_ENSURE_ARGS  (TENANT_ENSURE_NKEYS + 3 + 2 * 7)

/* The script: KEYS sp:t:<name>, sp:key:<digest>, sp:tenants; ARGV name, digest, created_ms,
 * then field/value pairs of the quotas. */
extern const char TENANT_ENSURE_LUA[];

/* The local tenant's own quotas: generous, since the farm is the developer's alone. */
typedef struct {
    char keys[TENANT_ENSURE_NKEYS][96];
    char name[65], digest[65], created[24];
    const char *argv[TENANT_ENSURE_ARGS]; /* keys then arguments, pointing into this struct */
    int argc;
} tenant_ensure_t;

/* Fills e for the tenant `name` with the key whose SHA-256 hex is digest, and the local
 * tenant's quotas. */
void tenant_ensure_local_args(tenant_ensure_t *e, const char *name, const char *digest,
                              uint64_t now_ms);

#endif
