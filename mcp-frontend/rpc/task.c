/* mcp-frontend/rpc/task.c — see task.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonrpc.h"
#include "task.h"

static void s_iso8601(uint64_t ms, char out[40])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%03uZ", (unsigned)(ms % 1000));
}

json_t *task_json(const char *id, const char *status, uint64_t created_ms, uint64_t updated_ms,
                  long ttl_ms, const char *message)
{
    char created[40], updated[40];
    s_iso8601(created_ms, created);
    s_iso8601(updated_ms, updated);
    json_t *t = json_pack("{s:s,s:s,s:s,s:s,s:I}", "taskId", id, "status", status, "createdAt",
                          created, "lastUpdatedAt", updated, "ttl", (json_int_t)ttl_ms);
    if (message) json_object_set_new(t, "statusMessage", json_str_safe(message));
    return t;
}

json_t *task_json_modern(const char *id, const char *status, uint64_t created_ms,
                         uint64_t updated_ms, long ttl_ms, long poll_ms, const char *message)
{
    char created[40], updated[40];
    s_iso8601(created_ms, created);
    s_iso8601(updated_ms, updated);
    json_t *t = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "taskId", id, "status", status, "createdAt",
                          created, "lastUpdatedAt", updated, "ttlMs", (json_int_t)ttl_ms,
                          "pollIntervalMs", (json_int_t)poll_ms);
    if (message) json_object_set_new(t, "statusMessage", json_str_safe(message));
    return t;
}

const char *task_status_for(status_t st, int cancelled)
{
    if (cancelled || st == ST_CANCELLED) return "cancelled";
    return st == ST_OK ? "completed" : "failed";
}

int task_terminal(const char *status)
{
    return status && (!strcmp(status, "completed") || !strcmp(status, "failed") ||
                      !strcmp(status, "cancelled"));
}

void task_mark_related(json_t *call_result, const char *id)
{
    json_t *meta = json_object_get(call_result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(call_result, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/related-task",
                        json_pack("{s:s}", "taskId", id));
}
