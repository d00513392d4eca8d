/* mcp-frontend/state/store_scripts.c — see store.h: Lua scripts on the store's connection. A script
 * run as a query (the rate limiter's) goes by EVALSHA, its SHA-1 learnt from SCRIPT LOAD on
 * every connection, and again by source on NOSCRIPT; a script run as a write goes by EVAL with
 * its source, because the journal may replay it into a Redis that never saw it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "store_state.h"

/* The script cache was flushed (or Redis restarted): run it by source, once. 1 when resent. */
int store_retry_by_source(store_t *self, op_t *op)
{
    op->script->sha[0] = '\0';
    char *cmd;
    free(op->argv[0]);
    free(op->argv[1]);
    op->argv[0] = xstrdup("EVAL");
    op->argvlen[0] = 4;
    op->argv[1] = xstrdup(op->script->source);
    op->argvlen[1] = strlen(op->script->source);
    op->script = NULL;
    int len = redisFormatCommandArgv(&cmd, op->argc, (const char **)op->argv, op->argvlen);
    int resent = len > 0 && store_send_op(self, op, cmd, (size_t)len) == 0;
    free(cmd);
    return resent;
}

static void s_on_script_loaded(void *arg, redisReply *reply)
{
    store_script_t *s = arg;
    if (reply && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(s->sha, reply->str, 41);
}

void store_load_scripts(store_t *self)
{
    for (store_script_t *s = self->scripts; s; s = s->next)
        store_queryf(self, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
}

void store_free_scripts(store_t *self)
{
    while (self->scripts) {
        store_script_t *s = self->scripts;
        self->scripts = s->next;
        free(s->source);
        free(s);
    }
}

store_script_t *store_script(store_t *self, const char *source)
{
    store_script_t *s = xcalloc(1, sizeof *s);
    s->source = xstrdup(source);
    s->next = self->scripts;
    self->scripts = s;
    if (self->ac) store_queryf(self, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
    return s;
}

int store_eval(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
               int nargs, const char **args)
{
    return store_evaln(self, script, fn, arg, nkeys, nargs, args, NULL);
}

int store_evaln(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
                int nargs, const char **args, const size_t *lens)
{
    if (!self) return -1; /* shutting down */
    /* like any query, a script waits for a connection being made (sessions opened while the
     * store reconnects after a Redis restart or a failover) */
    int wait = !self->ac && self->dial && !self->closing;
    if ((!self->ac && !wait) || self->closing) return -1;
    op_t *op = store_op_new(self, fn, arg);
    op->argc = 3 + nargs;
    op->argv = xcalloc((size_t)op->argc, sizeof *op->argv);
    op->argvlen = xcalloc((size_t)op->argc, sizeof *op->argvlen);
    int by_sha = script->sha[0] != '\0';
    op->argv[0] = xstrdup(by_sha ? "EVALSHA" : "EVAL");
    op->argv[1] = xstrdup(by_sha ? script->sha : script->source);
    char n[16];
    snprintf(n, sizeof n, "%d", nkeys);
    op->argv[2] = xstrdup(n);
    for (int i = 0; i < 3; i++) op->argvlen[i] = strlen(op->argv[i]);
    for (int i = 0; i < nargs; i++) { /* binary-safe: a snapshot's bytes */
        size_t len = lens ? lens[i] : strlen(args[i]);
        op->argv[3 + i] = xmalloc(len + 1);
        memcpy(op->argv[3 + i], args[i], len);
        op->argv[3 + i][len] = '\0';
        op->argvlen[3 + i] = len;
    }
    op->script = by_sha ? script : NULL;
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, op->argc, (const char **)op->argv, op->argvlen);
    if (len >= 0 && wait) {
        store_wait_op(self, op, cmd, (size_t)len);
        return 0;
    }
    int rc = len < 0 ? -1 : store_send_op(self, op, cmd, (size_t)len);
    if (len >= 0) free(cmd);
    if (rc < 0) store_op_free(op);
    return rc;
}
