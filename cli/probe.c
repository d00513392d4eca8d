/* cli/probe.c — see probe.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/loop.h"
#include "proto/client.h"
#include "proto/job.h"
#include "proto/result.h"
#include "cli/farm/farm.h"
#include "probe.h"

#define PROBE_SUBMIT_MS 3000  /* to get the job accepted: the broker may still be starting */
#define PROBE_ANSWER_MS 25000 /* then for its answer: the first fork of a zygote included */

int probe_redis(const char *url)
{
    char err[256];
    redisContext *c = farm_redis(url, err, sizeof err);
    if (!c) return 0;
    redisReply *r = redisCommand(c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* A TCP connection to HOST:PORT (0.0.0.0 or no host: 127.0.0.1), or -1. */
static int s_connect(const char *host_port)
{
    char host[128];
    snprintf(host, sizeof host, "%s", host_port);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = '\0';
    int port = atoi(colon + 1);
    if (!strcmp(host, "0.0.0.0") || !host[0]) snprintf(host, sizeof host, "127.0.0.1");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    if (fd >= 0) close(fd);
    return -1;
}

int probe_http(const char *host_port)
{
    int fd = s_connect(host_port), ok = 0;
    if (fd < 0) return 0;
    const char *req = "GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n";
    char buf[64] = "";
    struct pollfd p = {fd, POLLIN, 0};
    if (write(fd, req, strlen(req)) == (ssize_t)strlen(req) && poll(&p, 1, 1000) == 1 &&
        read(fd, buf, sizeof buf - 1) > 12)
        ok = strncmp(buf + 9, "200", 3) == 0;
    close(fd);
    return ok;
}

int probe_served(const char *host_port)
{
    int fd = s_connect(host_port), ok = 0;
    if (fd < 0) return 0;
    const char *req = "GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n";
    char buf[4096];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    if (write(fd, req, strlen(req)) == (ssize_t)strlen(req))
        while (got + 1 < sizeof buf && poll(&p, 1, 1000) == 1) {
            ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
            if (n <= 0) break;
            got += (size_t)n;
        }
    buf[got] = '\0';
    const char *list = strstr(buf, "\"profiles_served\":[");
    ok = list && list[strlen("\"profiles_served\":[")] == '"';
    close(fd);
    return ok;
}

int probe_listening(const char *host_port)
{
    int fd = s_connect(host_port);
    if (fd >= 0) close(fd);
    return fd >= 0;
}

/* ---- the probe job ------------------------------------------------------------------------ */

typedef struct {
    int done;
    status_t status;
    char detail[256];
} probe_t;

static void s_on_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                       const uint8_t *body, size_t len)
{
    (void)id;
    probe_t *p = arg;
    if (ev != CLIENT_RESULT) return;
    result_t res;
    char err[128];
    p->done = 1;
    if (result_decode(body, len, &res, err, sizeof err) < 0) {
        p->status = ST_INTERNAL_ERROR;
        snprintf(p->detail, sizeof p->detail, "%s", err);
        return;
    }
    p->status = res.status;
    snprintf(p->detail, sizeof p->detail, "%s", res.error.message ? res.error.message : "");
    result_clear(&res);
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)arg;
    loop_stop(loop);
}

/* Turns the loop in 50 ms steps until the answer came or the clock reached give_up. */
static void s_wait(loop_t *loop, const probe_t *p, uint64_t give_up)
{
    while (!p->done && clock_mono_ms() < give_up) {
        loop_timer_add(loop, 50, 0, s_on_tick, NULL);
        loop_run(loop);
    }
}

int probe_job(const char *endpoint, const curve_cert_t *broker_key, const curve_cert_t *mine,
              const char *service, char *detail, size_t cap)
{
    void *ctx = zmq_ctx_new();
    loop_t *loop = loop_new();
    probe_t p = {0};
    client_conf_t cc = {.endpoint = endpoint, .heartbeat_ms = 500, .grace_ms = 2000};
    if (broker_key) {
        cc.curve_server_key = broker_key->public_key;
        cc.curve_public_key = mine->public_key;
        cc.curve_secret_key = mine->secret_key;
    }
    client_t *cl = client_new(ctx, loop, &cc, s_on_event, &p);
    char name[65];
    snprintf(name, sizeof name, "%s", service);
    jobspec_t job;
    jobspec_init(&job);
    job.tenant = "local";
    job.service = name;
    job.code = "print('ready')";
    job.code_len = strlen(job.code);
    job.submitted_ms = clock_wall_ms();
    buf_t body;
    buf_init(&body);
    jobspec_encode(&job, &body);
    uint8_t id[ID_BYTES];
    id_new(id);
    route_t route = {.deadline_ms = clock_wall_ms() + 20000};
    snprintf(route.tenant, sizeof route.tenant, "local");
    uint64_t give_up = clock_mono_ms() + PROBE_SUBMIT_MS;
    int sent = 0;
    while (!p.done && clock_mono_ms() < give_up) {
        if (!sent) sent = client_submit(cl, job.service, id, &route, body.data, body.len) == 0;
        loop_timer_add(loop, 50, 0, s_on_tick, NULL);
        loop_run(loop);
    }
    if (sent) s_wait(loop, &p, clock_mono_ms() + PROBE_ANSWER_MS); /* the answer we asked for */
    snprintf(detail, cap, "%s%s%s", p.done ? status_name(p.status) : "no answer",
             p.detail[0] ? ": " : "", p.detail);
    buf_free(&body);
    client_destroy(&cl);
    loop_destroy(&loop);
    zmq_ctx_term(ctx);
    if (p.done && p.status == ST_OK) return 0;
    return p.done && p.status == ST_REJECTED ? PROBE_NOT_SERVED : -1;
}
