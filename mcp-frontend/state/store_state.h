/* mcp-frontend/state/store_state.h — the store's insides, shared by its two files and private to
 * them: store.c (the connection, queries, the journal's writes) and store_scripts.c (Lua
 * scripts: SCRIPT LOAD, EVALSHA with EVAL on NOSCRIPT, scripts as writes). Their contract with
 * the rest of the front-end is store.h. */
#ifndef SP_FE_STORE_STATE_H
#define SP_FE_STORE_STATE_H
#include <hiredis/async.h>

#include "common/redis_dial.h"
#include "common/redis_loop.h"
#include "store.h"
#include "store_journal.h"

#define BUFFER_BYTES_PER_COMMAND 4096 /* the journal's byte cap, per command it may hold */
#define MAX_CONNECT_HOOKS        4

struct store_script {
    char *source;
    char sha[41]; /* empty until SCRIPT LOAD answered */
    struct store_script *next;
};

/* One command in flight: what to call back, and whether it is an EVALSHA to retry. */
typedef struct op {
    store_t *store;
    store_reply_fn *fn;
    void *arg;
    store_script_t *script; /* EVALSHA: retried as EVAL on NOSCRIPT */
    journal_entry_t *entry; /* a write: its journal entry */
    uint64_t conn;          /* the connection it was sent on */
    char *cmd;              /* a query waiting for the connection being made: its bytes */
    size_t len;
    uint64_t deadline; /* ...and when it gives up (monotonic) */
    struct op *next;
    int argc;
    char **argv;
    size_t *argvlen;
} op_t;

typedef struct {
    store_connect_fn *fn;
    void *arg;
} hook_t;

struct store {
    loop_t *loop;
    redis_url_t url;
    store_conf_t conf;
    redis_dial_t *dial;    /* a connection being made */
    redisAsyncContext *ac; /* NULL while disconnected */
    uint64_t conn;         /* counts connections: ops of an old one are told apart */
    redis_loop_t io;       /* the connection's fd on the loop (common/redis_loop.h) */
    char where[300];       /* the server of the current connection */
    uint64_t *sent;        /* FIFO of send times (mono ms) of unanswered commands */
    size_t sent_head, sent_n, sent_cap;
    journal_t *journal;
    op_t *waiting, *waiting_tail; /* queries made while the connection was being made */
    store_script_t *scripts;
    hook_t hooks[MAX_CONNECT_HOOKS];
    int n_hooks;
    uint64_t timer;       /* watchdog and reconnect */
    uint64_t retry_at_ms; /* next reconnect attempt */
    long backoff_ms;
    int drop;    /* the server turned out a replica or still loading: reconnect */
    int closing; /* inside redisAsyncFree: send nothing */
    store_stats_t stats;
};

/* A command not yet sent, calling fn with its reply. */
op_t *store_op_new(store_t *self, store_reply_fn *fn, void *arg);
void store_op_free(op_t *op);
/* Sends a formatted command on the connection: 0, or -1 when there is none to take it. */
int store_send_op(store_t *self, op_t *op, const char *cmd, size_t len);
/* Keeps a query (taking cmd) until the connection being made is there, or its deadline. */
void store_wait_op(store_t *self, op_t *op, char *cmd, size_t len);

/* store_scripts.c: SCRIPT LOAD of every script, on each new connection */
void store_load_scripts(store_t *self);
/* A reply NOSCRIPT to op's EVALSHA (the script cache was flushed, or Redis restarted): sends it
 * again by source. 1 when it did (op lives on), 0 when it could not. */
int store_retry_by_source(store_t *self, op_t *op);
void store_free_scripts(store_t *self);

#endif
