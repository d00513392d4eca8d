/* cli/farm/mcp_http.c — see mcp_http.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "http1.h"
#include "mcp_http.h"

#define PROTOCOL_VERSION "2025-11-25"
#define CLOSE_MS         5000 /* ending the session is a courtesy: never wait long for it */

/* JSON-RPC error codes of snakepit's front-end (mcp-frontend/rpc/jsonrpc.h) */
#define RPC_INVALID_PARAMS -32602
#define RPC_RATE_LIMITED   -32029
#define RPC_UNAVAILABLE    -32030
#define RPC_QUOTA          -32031

struct mcp_http {
    http1_url_t url;
    char key[600];              /* the API key, sent as a Bearer token; empty: none */
    char session[128];          /* Mcp-Session-Id the server gave at initialize; empty until then */
    int next_id;                /* of the next JSON-RPC request */
    long timeout_ms;            /* the wait for one answer */
    long retry_ms;              /* how long one request may keep being retried after 429/503 */
    mcp_http_failure_t failure; /* of the last request */
};

mcp_http_t *mcp_http_new(const char *url, const char *key, const char *ca_file, long timeout_ms,
                         long retry_ms, char *err, size_t errlen)
{
    mcp_http_t *self = xcalloc(1, sizeof *self);
    if (http1_parse_url(url, &self->url, err, errlen) < 0) {
        free(self);
        return NULL;
    }
    snprintf(self->url.ca_file, sizeof self->url.ca_file, "%s", ca_file ? ca_file : "");
    if (key && strlen(key) >= sizeof self->key) {
        snprintf(err, errlen, "the API key is longer than %zu bytes", sizeof self->key - 1);
        free(self);
        return NULL;
    }
    snprintf(self->key, sizeof self->key, "%s", key ? key : "");
    self->next_id = 1;
    self->timeout_ms = timeout_ms;
    self->retry_ms = retry_ms;
    return self;
}

/* The header lines every request carries: the key, and the session once there is one. */
static void s_headers(const mcp_http_t *self, buf_t *h)
{
    buf_init(h);
    buf_puts(h, "Accept: application/json, text/event-stream\r\n");
    if (self->key[0]) buf_printf(h, "Authorization: Bearer %s\r\n", self->key);
    if (self->session[0])
        buf_printf(h, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", self->session,
                   PROTOCOL_VERSION);
}

void mcp_http_destroy(mcp_http_t **self_p)
{
    mcp_http_t *self = *self_p;
    if (!self) return;
    if (self->session[0]) {
        buf_t h;
        http1_answer_t ans;
        char err[256];
        s_headers(self, &h);
        if (http1_exchange(&self->url, "DELETE", (const char *)h.data, NULL, 0, CLOSE_MS, &ans, err,
                           sizeof err) == 0)
            http1_answer_free(&ans);
        buf_free(&h);
    }
    explicit_bzero(self->key, sizeof self->key);
    free(self);
    *self_p = NULL;
}

mcp_http_failure_t mcp_http_failure(const mcp_http_t *self)
{
    return self->failure;
}

/* How long a turned-away answer asks us to wait, in ms: the JSON-RPC error's retry_after_ms
 * (exact), else Retry-After (whole seconds), else -1 (it did not ask for a retry). */
static long s_retry_after_ms(const http1_answer_t *ans, json_t *answer)
{
    json_t *ms = json_object_get(json_object_get(json_object_get(answer, "error"), "data"),
                                 "retry_after_ms");
    if (json_is_integer(ms) && json_integer_value(ms) >= 0) return (long)json_integer_value(ms);
    char v[32];
    if (http1_header(ans, "Retry-After", v, sizeof v)) {
        char *end;
        long s = strtol(v, &end, 10);
        if (end != v && !*end && s >= 0) return s * 1000;
    }
    return -1;
}

static void s_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0) {
    }
}

/* One POST, sent again while the farm turns it away for now and the retry budget allows.
 * Returns the parsed answer (NULL for a notification's empty one); *status is the last HTTP
 * status. -1 with the reason when no answer came. */
static int s_post(mcp_http_t *self, json_t *msg, int *status, json_t **answer, char *err,
                  size_t errlen)
{
    char *payload = json_dumps(msg, JSON_COMPACT);
    if (!payload) {
        snprintf(err, errlen, "cannot encode the request");
        self->failure = MCP_HTTP_FAILED;
        return -1;
    }
    uint64_t give_up = clock_mono_ms() + (uint64_t)self->retry_ms;
    int rc;
    for (;;) {
        buf_t h;
        http1_answer_t ans;
        s_headers(self, &h);
        buf_puts(&h, "Content-Type: application/json\r\n");
        rc = http1_exchange(&self->url, "POST", (const char *)h.data, payload, strlen(payload),
                            self->timeout_ms, &ans, err, errlen);
        buf_free(&h);
        if (rc < 0) {
            self->failure = MCP_HTTP_UNREACHABLE;
            break;
        }
        *status = ans.status;
        *answer =
            ans.body.len ? json_loadb((const char *)ans.body.data, ans.body.len, 0, NULL) : NULL;
        char sid[sizeof self->session];
        if (http1_header(&ans, "Mcp-Session-Id", sid, sizeof sid))
            snprintf(self->session, sizeof self->session, "%s", sid);
        long wait = ans.status == 429 || ans.status == 503 ? s_retry_after_ms(&ans, *answer) : -1;
        http1_answer_free(&ans);
        if (wait < 0 || clock_mono_ms() + (uint64_t)wait > give_up) break;
        json_decref(*answer);
        *answer = NULL;
        s_sleep_ms(wait);
    }
    free(payload);
    return rc;
}

/* The failure a JSON-RPC error code stands for. */
static mcp_http_failure_t s_failure_of(json_int_t code, int status)
{
    if (status == 401 || status == 403) return MCP_HTTP_REFUSED;
    if (code == RPC_INVALID_PARAMS) return MCP_HTTP_INVALID;
    if (status == 429 || code == RPC_RATE_LIMITED || code == RPC_QUOTA) return MCP_HTTP_LIMITED;
    if (status == 503 || code == RPC_UNAVAILABLE) return MCP_HTTP_UNREACHABLE;
    return MCP_HTTP_FAILED;
}

static json_t *s_request(mcp_http_t *self, const char *method, json_t *params, char *err,
                         size_t errlen)
{
    json_t *msg = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", self->next_id++,
                            "method", method, "params", params ? params : json_object());
    int status = 0;
    json_t *answer = NULL;
    int rc = s_post(self, msg, &status, &answer, err, errlen);
    json_decref(msg);
    if (rc < 0) return NULL;
    json_t *error = json_object_get(answer, "error");
    json_t *result = json_incref(json_object_get(answer, "result"));
    if (status != 200 || error || !result) {
        const char *m = json_string_value(json_object_get(error, "message"));
        json_int_t code = json_integer_value(json_object_get(error, "code"));
        if (!m && (status == 401 || status == 403)) m = "the API key was refused";
        if (status == 200 || status == 429)
            snprintf(err, errlen, "%s: %s", method, m ? m : "an answer without a result");
        else
            snprintf(err, errlen, "%s: HTTP %d%s%s", method, status, m ? ": " : "", m ? m : "");
        self->failure = s_failure_of(code, status);
        json_decref(result);
        result = NULL;
    } else {
        self->failure = MCP_HTTP_OK;
    }
    json_decref(answer);
    return result;
}

int mcp_http_initialize(mcp_http_t *self, char *err, size_t errlen)
{
    json_t *params =
        json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", PROTOCOL_VERSION, "capabilities",
                  "clientInfo", "name", "snakepit-cli", "version", SNAKEPIT_VERSION);
    json_t *r = s_request(self, "initialize", params, err, errlen);
    if (!r) return -1;
    json_decref(r);
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
    int status = 0;
    json_t *answer = NULL;
    int rc = s_post(self, note, &status, &answer, err, errlen);
    json_decref(note);
    json_decref(answer);
    if (rc == 0 && status / 100 != 2) {
        snprintf(err, errlen, "notifications/initialized: HTTP %d", status);
        self->failure = s_failure_of(0, status);
        return -1;
    }
    return rc;
}

json_t *mcp_http_call(mcp_http_t *self, const char *tool, json_t *arguments, char *err,
                      size_t errlen)
{
    return s_request(self, "tools/call",
                     json_pack("{s:s, s:o}", "name", tool, "arguments", arguments), err, errlen);
}

mcp_http_failure_t mcp_http_refusal(const json_t *result, const char **text)
{
    const json_t *err = json_object_get(json_object_get(result, "_meta"), "snakepit/error");
    const char *kind = json_string_value(json_object_get(err, "kind"));
    *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    if (!json_is_true(json_object_get(result, "isError")) || !kind) return MCP_HTTP_OK;
    if (!strcmp(kind, "invalid_argument") || !strcmp(kind, "not_found")) return MCP_HTTP_INVALID;
    if (!strcmp(kind, "unavailable")) return MCP_HTTP_UNREACHABLE;
    return MCP_HTTP_FAILED;
}
