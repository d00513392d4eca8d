/* mcp-frontend/state/redis_upkeep.c — see redis_upkeep.h. The tenant goes through the store's
 * journal like any write (the script is idempotent, so a replay is harmless); the set-up check
 * is one CONFIG GET per setting, answered on the loop. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_check.h"
#include "common/sha256.h"
#include "common/tenant_ensure.h"
#include "redis_upkeep.h"

struct redis_upkeep {
    store_t *store;
    char digest[65]; /* of the local tenant's key; "" when this front-end owns none */
    redis_config_t cfg;
    int pending; /* CONFIG GET answers awaited */
    int refused; /* one was refused: ask INFO instead */
};

static void s_report(redis_upkeep_t *self)
{
    char problems[REDIS_CHECK_MAX][240];
    int n = redis_check(&self->cfg, problems, REDIS_CHECK_MAX);
    for (int i = 0; i < n; i++)
        log_warn("event=redis_config_warning server=%s problem=\"%s\"", store_where(self->store),
                 problems[i]);
}

static void s_on_info(void *arg, redisReply *reply)
{
    redis_upkeep_t *self = arg;
    if (reply && reply->type == REDIS_REPLY_STRING) redis_config_info(&self->cfg, reply->str);
    s_report(self);
}

static void s_on_config(void *arg, redisReply *reply)
{
    redis_upkeep_t *self = arg;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        reply->element[1]->type == REDIS_REPLY_STRING)
        redis_config_set(&self->cfg, reply->element[0]->str, reply->element[1]->str);
    else
        self->refused = 1;
    if (--self->pending > 0) return;
    if (!self->refused || store_queryf(self->store, s_on_info, self, "INFO persistence") < 0)
        s_report(self);
}

static void s_check(redis_upkeep_t *self)
{
    if (self->pending) return; /* the last connection's check is still being answered */
    redis_config_init(&self->cfg);
    self->refused = 0;
    for (int i = 0; redis_check_names[i]; i++)
        if (store_queryf(self->store, s_on_config, self, "CONFIG GET %s", redis_check_names[i]) ==
            0)
            self->pending++;
}

static void s_ensure_tenant(redis_upkeep_t *self)
{
    tenant_ensure_t e;
    tenant_ensure_local_args(&e, "local", self->digest, clock_wall_ms());
    store_write_eval(self->store, TENANT_ENSURE_LUA, TENANT_ENSURE_NKEYS, e.argc, e.argv, NULL,
                     NULL, NULL);
}

static void s_on_connect(void *arg, store_t *store)
{
    (void)store;
    redis_upkeep_t *self = arg;
    if (self->digest[0]) s_ensure_tenant(self);
    s_check(self);
}

/* The key file `snakepit up` wrote: one line, sp_ and 64 hex characters. */
static int s_read_digest(const char *path, char digest[65], char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char line[128] = "";
    int ok = f && fgets(line, sizeof line, f) != NULL;
    if (f) fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!ok || strlen(line) != 67 || strncmp(line, "sp_", 3) != 0) {
        snprintf(err, errlen, "--local-key-file %s: not a snakepit key file", path);
        return -1;
    }
    sha256_hex(line, strlen(line), digest);
    explicit_bzero(line, sizeof line);
    return 0;
}

redis_upkeep_t *redis_upkeep_new(store_t *store, const char *key_file, char *err, size_t errlen)
{
    redis_upkeep_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    if (key_file && key_file[0] && s_read_digest(key_file, self->digest, err, errlen) < 0) {
        free(self);
        return NULL;
    }
    store_on_connect(store, s_on_connect, self);
    return self;
}

void redis_upkeep_destroy(redis_upkeep_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}
