/* cli/drain.c — see drain.h. With --wait it then polls the listener until the node has stopped
 * (the connection is refused), bounded by the grace the node answered with plus 15 s. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "drain.h"
#include "cli/farm/http1.h"

typedef struct {
    char executor[300]; /* HOST:PORT of its metrics listener */
    int wait;
} drain_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(drain_args_t, executor, "executor", "HOST:PORT",
                "the executor node's metrics listener (its --metrics; from this machine: "
                "127.0.0.1:9102)"),
    CFG_OPT_BOOL(drain_args_t, wait, "wait",
                 "wait until the node has stopped (at most its grace + 15 s)"),
    CFG_OPT_END,
};

#define ASK_MS 10000

/* 1 while the listener still answers: the node has not stopped yet. */
static int s_still_up(const http1_url_t *base)
{
    http1_url_t u = *base;
    snprintf(u.path, sizeof u.path, "/healthz");
    http1_answer_t ans;
    char err[256];
    if (http1_exchange(&u, "GET", NULL, NULL, 0, 2000, &ans, err, sizeof err) < 0) return 0;
    http1_answer_free(&ans);
    return 1;
}

int drain_main(int argc, char **argv)
{
    drain_args_t a = {0}, defaults = a;
    char err[512], *rest[1];
    int n_rest = 1;
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit drain --executor HOST:PORT [--wait]",
                     "Drain an executor node: it tells its brokers it is leaving, takes no new\n"
                     "job, lets the running ones finish within its --drain-grace-s, and exits\n"
                     "(as on SIGTERM). HOST:PORT is its metrics listener, which takes this only\n"
                     "from its own machine. Exits 0 once asked (with --wait: once it has\n"
                     "stopped), 1 when it refused or did not stop in time, 69 when it cannot\n"
                     "be reached.",
                     s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit drain: %s\n", err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    if (n_rest || !a.executor[0]) {
        fprintf(stderr, "snakepit drain: %s (see --help)\n",
                n_rest ? "unexpected argument" : "--executor HOST:PORT is needed");
        return EX_USAGE;
    }
    char url[400];
    snprintf(url, sizeof url, "http://%s/drain", a.executor);
    http1_url_t u;
    if (http1_parse_url(url, &u, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit drain: --executor %s: %s\n", a.executor, err);
        return EX_USAGE;
    }
    http1_answer_t ans;
    if (http1_exchange(&u, "POST", "Content-Length: 0\r\n", NULL, 0, ASK_MS, &ans, err,
                       sizeof err) < 0) {
        fprintf(stderr, "snakepit drain: %s: %s\n", a.executor, err);
        return EX_UNAVAILABLE;
    }
    json_t *j =
        ans.body.len ? json_loadb((const char *)ans.body.data, ans.body.len, 0, NULL) : NULL;
    int status = ans.status;
    const char *state = json_string_value(json_object_get(j, "state"));
    long running = (long)json_integer_value(json_object_get(j, "running"));
    long grace = (long)json_integer_value(json_object_get(j, "grace_s"));
    if (status != 202 || !state) {
        fprintf(stderr, "snakepit drain: %s answered %d: %.*s\n", a.executor, status,
                (int)(ans.body.len > 200 ? 200 : ans.body.len), (const char *)ans.body.data);
        json_decref(j);
        http1_answer_free(&ans);
        return 1;
    }
    printf("%s: %s, %ld job%s running, grace %ld s\n", a.executor, state, running,
           running == 1 ? "" : "s", grace);
    json_decref(j);
    http1_answer_free(&ans);
    if (!a.wait) return 0;
    uint64_t until = clock_mono_ms() + (uint64_t)(grace + 15) * 1000u;
    while (s_still_up(&u)) {
        if (clock_mono_ms() > until) {
            fprintf(stderr, "snakepit drain: %s still answers %ld s after it was asked\n",
                    a.executor, grace + 15);
            return 1;
        }
        usleep(200000);
    }
    printf("%s: stopped\n", a.executor);
    return 0;
}
