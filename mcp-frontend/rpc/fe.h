/* mcp-frontend/rpc/fe.h — the front-end's long-lived parts, one of each per process, as main.c
 * wires them; everything runs on the loop thread, so nothing here is locked.
 *
 * Modules are built from their own configuration slice and the parts they use, given to their
 * _new; none reads another's configuration. The method handlers, at the top, reach the parts
 * they need through their call (call.h's c->fe), the way Redis commands reach the server. */
#ifndef SP_FE_FE_H
#define SP_FE_FE_H
#include "common/loop.h"

#ifdef SNAKEPIT_VERSION
#define FE_VERSION SNAKEPIT_VERSION /* from the Makefile */
#else
#define FE_VERSION "0.0.0-dev"
#endif

typedef struct fe {
    loop_t *loop;
    struct store *store;               /* store.h: the Redis connection */
    struct tenants *tenants;           /* tenants.h: API keys and quotas */
    struct limiter *limiter;           /* limiter.h: rate limits */
    struct holds *holds; /* holds.h: what tenants hold open, counted across the farm */
    struct mcp_sessions *mcp_sessions; /* mcp_session.h: this process's copies of legacy sessions */
    struct mcp_session_store *mcp_session_store; /* mcp_session_store.h: legacy sessions in Redis */
    struct stream_log *stream_log; /* stream_log.h: legacy streams' event ids and replay */
    struct jobs *jobs;             /* jobs.h: the link to the farm */
    struct served *served;         /* served.h: the profiles the farm serves now */
    struct records *records;       /* records.h: what is written about executions */
    struct filestore *files;       /* filestore.h: linked files, within their bounds */
    struct executions *executions; /* execution.h: tool calls running on the farm */
    struct tools *tools;           /* tools.h: tools/list and tools/call */
    struct compat *compat;         /* compat.h: the drop-in endpoints and their tools */
    struct resources *resources;   /* resources.h */
    struct prompts *prompts;       /* prompts.h */
    struct tasks *tasks;           /* tasks.h: 2025-11-25 tasks */
    struct tasks_extension *tasks_extension; /* tasks_extension.h: the 2026-07-28 tasks extension */
    struct listeners *listeners;             /* listen.h: subscriptions/listen streams */
    struct bus *bus;                         /* bus.h: events to and from the other front-ends */
    struct round_trip *round_trip;           /* round_trip.h: the key that seals requestState */
    struct session_records
        *session_records;        /* session_records.h: sandbox sessions' records */
    struct snapshots *snapshots; /* snapshots.h: their snapshots */
    struct mcp *mcp;             /* mcp.h: the method table */
    struct http *http;           /* http.h; NULL without --http */
    struct console *console;     /* console.h: the tenant's web page, served on http */
    struct stdio_tx *stdio;      /* stdio.h; NULL without --stdio */
    char instance[80];           /* host:pid, for logs, records and the snapshot */
    const char *http_listen;     /* --http, or "off" */
    double started_s;            /* wall clock at start (process_start_time_seconds) */
    int fixtures;                /* --test-fixtures: the conformance suite's tools too */
} fe_t;

#endif
