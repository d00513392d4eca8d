/* mcp-frontend/state/store_scripts.c — see store.h: Lua scripts on the store's connection, built
 * on the store's own interface like any of its users. A script run as a query (the rate
 * limiter's) goes by EVALSHA, its SHA-1 learnt from SCRIPT LOAD on every connection — a connect
 * hook, registered with a store's first script — and again by source on NOSCRIPT; a script run
 * as a write (store_write_script) goes by EVALSHA too: the hook runs before the journal is sent
 * on a new connection, so a replay into a Redis that never saw the script finds it loaded. A
 * store's scripts live in one table the store keeps and frees. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "store.h"

struct store_script {
    char *source;
    char sha[41]; /* empty until SCRIPT LOAD answered */
    struct store_script *next;
};

typedef struct {
    store_script_t *head; /* every script made on the store */
} scripts_t;

static void s_on_script_loaded(void *arg, redisReply *reply)
{
    store_script_t *s = arg;
    if (reply && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(s->sha, reply->str, 41);
}

/* store_connect_fn: each new connection learns every script (the first one too). */
static void s_load_all(void *arg, store_t *store)
{
    scripts_t *t = arg;
    for (store_script_t *s = t->head; s; s = s->next)
        store_queryf(store, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
}

static void s_free_all(void *arg)
{
    scripts_t *t = arg;
    while (t->head) {
        store_script_t *s = t->head;
        t->head = s->next;
        free(s->source);
        free(s);
    }
    free(t);
}

/* The store's table, made (and its connect hook registered) with its first script. */
static scripts_t *s_table(store_t *store)
{
    scripts_t *t = store_scripts(store);
    if (t) return t;
    t = xcalloc(1, sizeof *t);
    store_keep_scripts(store, t, s_free_all);
    store_on_connect(store, s_load_all, t);
    return t;
}

store_script_t *store_script(store_t *self, const char *source)
{
    scripts_t *t = s_table(self);
    store_script_t *s = xcalloc(1, sizeof *s);
    s->source = xstrdup(source);
    s->next = t->head;
    t->head = s;
    if (store_connected(self))
        store_queryf(self, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
    return s;
}

/* store_resend_fn: the script cache was flushed (or Redis restarted): run it by source, once. */
static int s_by_source(void *arg, const redisReply *error, int argc, char **argv, size_t *argvlen)
{
    (void)argc;
    store_script_t *script = arg;
    if (!error->str || strncmp(error->str, "NOSCRIPT", 8) != 0) return 0;
    script->sha[0] = '\0';
    free(argv[0]);
    free(argv[1]);
    argv[0] = xstrdup("EVAL");
    argvlen[0] = 4;
    argv[1] = xstrdup(script->source);
    argvlen[1] = strlen(script->source);
    return 1;
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
    int argc = 3 + nargs;
    char **argv = xcalloc((size_t)argc, sizeof *argv);
    size_t *argvlen = xcalloc((size_t)argc, sizeof *argvlen);
    int by_sha = script->sha[0] != '\0';
    argv[0] = xstrdup(by_sha ? "EVALSHA" : "EVAL");
    argv[1] = xstrdup(by_sha ? script->sha : script->source);
    char n[16];
    snprintf(n, sizeof n, "%d", nkeys);
    argv[2] = xstrdup(n);
    for (int i = 0; i < 3; i++) argvlen[i] = strlen(argv[i]);
    for (int i = 0; i < nargs; i++) { /* binary-safe: a snapshot's bytes */
        size_t len = lens ? lens[i] : strlen(args[i]);
        argv[3 + i] = xmalloc(len + 1);
        memcpy(argv[3 + i], args[i], len);
        argv[3 + i][len] = '\0';
        argvlen[3 + i] = len;
    }
    /* like any query, a script waits for a connection being made (sessions opened while the
     * store reconnects after a Redis restart or a failover) */
    return store_query_resend(self, fn, arg, argc, argv, argvlen, by_sha ? s_by_source : NULL,
                              script);
}

int store_write_script(store_t *self, store_script_t *script, int nkeys, int nargs,
                       const char **args, const size_t *lens, store_reply_fn *fn, void *arg)
{
    return store_write_script_first(self, script, nkeys, nargs, args, lens, 0, NULL, NULL, NULL,
                                    fn, arg); /* no first form: the script alone */
}

int store_write_script_first(store_t *self, store_script_t *script, int nkeys, int nargs,
                             const char **args, const size_t *lens, int n_first,
                             const int *first_argc, const char **first_argv,
                             const size_t *first_lens, store_reply_fn *fn, void *arg)
{
    if (!self) return -1;
    /* By SHA once SCRIPT LOAD has answered (every connection loads every script before the
     * journal is sent on it, so a replay finds it), by source — the script alone — until then. */
    if (!script->sha[0])
        return store_write_eval(self, script->source, nkeys, nargs, args, lens, fn, arg);
    return store_write_call_first(self, "EVALSHA", script->sha, nkeys, nargs, args, lens, n_first,
                                  first_argc, first_argv, first_lens, fn, arg);
}
