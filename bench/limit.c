/* bench/limit.c — variant (a) of `make bench`, "the limit": a real snakepit-executor node
 * driven directly over its worker channel, with no broker, HTTP or Redis in the way.
 *
 * The driver plays the broker's part of PROTOCOL.md §3 and nothing more: it binds a ROUTER
 * on loopback, starts `snakepit-executor --broker tcp://127.0.0.1:PORT --slots N`, takes its
 * READY and CREDIT, heartbeats it every second, and keeps C jobs outstanding per
 * configuration. Like the broker it sends a JOB only against a credit (each RESULT returns
 * one); the jobs beyond the credits wait here in FIFO order, and their latency counts from
 * the moment they were "submitted" to this queue, as the farm's does from the HTTP request.
 *
 *   limit --executor build/bin/snakepit-executor [--slots N] [--pool N] [--concurrency 1,8,64]
 *         [--seconds S] [--warmup S] [--drain S] [--window-answers N] [--pace-ms MS] [--memory] [--log FILE] [--log-level L]
 *         [--executor-arg ARG]... [--profile P] SNIPPET...
 *
 * Prints one JSON line per (snippet, concurrency) — latency.h — with the CPU per execution
 * of the executor's process tree (node, zygote, and the job children it reaped) and of this
 * driver; with --memory, a last line with the zygote's and a running job's memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/profiles.h"
#include "proto/job.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "proto/wire.h"
#include "proto/wire_zmq.h"
#include "latency.h"
#include "proctree.h"

static const char *SERVICE = "python.basic"; /* --profile: the service every job asks for */
#define HEARTBEAT_MS 1000
#define MAX_CONC     4096
#define SLEEP_CODE   "import time\ntime.sleep(1.5)"

typedef struct {
    uint8_t  id[ID_BYTES];
    uint64_t started_us;
    int      state; /* 0 free, 1 queued here, 2 sent to the executor, 3 pausing (--pace-ms) */
} job_t;

typedef struct {
    const char *executor;
    long        slots, pool;
    conc_list_t conc;
    double      seconds, warmup, drain, ready_timeout;
    long        window_answers; /* 0: the concurrency */
    double      pace_ms;        /* pause after each answer before the next request (0: none) */
    int         memory;
    const char *log;
    const char *log_level;    /* the executor's */
    char       *extra[16];    /* --executor-arg: more options for the executor */
    int         n_extra;
    pid_t       pid;          /* the executor node */
    void       *ctx, *sock;
    uint8_t     peer[256];    /* the executor's ROUTER identity */
    size_t      peer_len;
    long        credit;
    int         ready;
    uint64_t    heartbeat_due;
    job_t       jobs[MAX_CONC];
    int         queue[MAX_CONC]; /* ring of job indexes waiting for a credit */
    int         q_head, q_len;
    buf_t       route;
} limit_t;


static int s_free_port(void)
{
    int                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t          len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* Started before the ZeroMQ context exists, so the fork copies no library threads. */
static pid_t s_start_executor(limit_t *L, const char *endpoint)
{
    char slots[24], pool[24];
    snprintf(slots, sizeof slots, "%ld", L->slots);
    snprintf(pool, sizeof pool, "%ld", L->pool);
    /* no reserve: this driver has no tenants, and (a) is measured on exactly --slots */
    char *argv[32] = {(char *)L->executor, "--broker", (char *)endpoint, "--slots", slots,
                      "--reserve-slots", "0", "--pool", pool, "--node-id", "bench-limit",
                      "--log-level", (char *)L->log_level};
    int   argc = 13;
    argv[argc++] = "--profiles";
    argv[argc++] = (char *)SERVICE;
    for (int i = 0; i < L->n_extra; i++) argv[argc++] = L->extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the driver */
    if (L->log) {
        int fd = open(L->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) dup2(fd, 2);
    }
    execv(L->executor, argv);
    _exit(127);
}

static void s_stop_executor(limit_t *L)
{
    if (L->pid <= 0) return;
    kill(L->pid, SIGTERM);
    for (int i = 0; i < 100; i++) { /* 10 s to stop in order, then by force */
        if (waitpid(L->pid, NULL, WNOHANG) == L->pid) {
            L->pid = 0;
            return;
        }
        usleep(100000);
    }
    kill(L->pid, SIGKILL);
    waitpid(L->pid, NULL, 0);
    L->pid = 0;
}

static void s_send(limit_t *L, const frame_t *f, int n)
{
    frame_t id = {L->peer, L->peer_len};
    if (wire_send(L->sock, &id, f, n) < 0)
        fprintf(stderr, "limit: send: %s\n", zmq_strerror(errno));
}

static void s_heartbeat(limit_t *L, uint64_t now_us)
{
    if (!L->ready || now_us < L->heartbeat_due) return;
    uint8_t cmd = W_HEARTBEAT;
    frame_t f[2] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}};
    s_send(L, f, 2);
    L->heartbeat_due = now_us + HEARTBEAT_MS * 1000u;
}

static void s_send_job(limit_t *L, job_t *j, const buf_t *body)
{
    uint8_t cmd = W_JOB;
    frame_t f[6] = {{(const uint8_t *)WIRE_WORKER_TAG, 4},
                    {&cmd, 1},
                    {(const uint8_t *)SERVICE, strlen(SERVICE)},
                    {j->id, ID_BYTES},
                    {L->route.data, L->route.len},
                    {body->data, body->len}};
    s_send(L, f, 6);
    j->state = 2;
    L->credit--;
}

static void s_dispatch(limit_t *L, const buf_t *body)
{
    while (L->credit > 0 && L->q_len > 0) {
        int k = L->queue[L->q_head];
        L->q_head = (L->q_head + 1) % MAX_CONC;
        L->q_len--;
        s_send_job(L, &L->jobs[k], body);
    }
}

static void s_enqueue(limit_t *L, int k, uint64_t now_us)
{
    job_t *j = &L->jobs[k];
    id_new(j->id);
    j->started_us = now_us;
    j->state = 1;
    L->queue[(L->q_head + L->q_len) % MAX_CONC] = k;
    L->q_len++;
}

typedef void(result_fn)(void *arg, const uint8_t *id, const uint8_t *body, size_t len);

/* Reads what the executor sent; results go to fn. -1 when the socket failed. */
static int s_pump(limit_t *L, long timeout_ms, result_fn *fn, void *arg)
{
    zmq_pollitem_t it = {L->sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, timeout_ms) < 0) return errno == EINTR ? 0 : -1;
    wire_msg_t msg;
    for (int budget = 0; budget < 1000; budget++) {
        int rc = wire_recv(L->sock, &msg, 1);
        if (rc < 0) return -1;
        if (rc == 0) break;
        worker_msg_t m;
        char         err[128];
        if (!msg.overflow && wire_parse_worker(&msg.frames, &m, err, sizeof err) == 0) {
            if (msg.identity.len <= sizeof L->peer) {
                memcpy(L->peer, msg.identity.data, msg.identity.len);
                L->peer_len = msg.identity.len;
            }
            if (m.cmd == W_READY) {
                L->ready = 1;
                L->credit = 0; /* a (re-)registration: its CREDIT follows */
            } else if (m.cmd == W_CREDIT) {
                L->credit += (long)m.credit;
            } else if (m.cmd == W_RESULT) {
                L->credit++; /* PROTOCOL.md §3: each RESULT returns one credit */
                if (fn) fn(arg, m.job_id, m.body.data, m.body.len);
            } else if (m.cmd == W_DISCONNECT) {
                L->ready = 0;
            }
        } else {
            fprintf(stderr, "limit: bad message from the executor: %s\n", err);
        }
        wire_msg_close(&msg);
    }
    s_heartbeat(L, clock_mono_us());
    return 0;
}

/* ---- one configuration ------------------------------------------------------------------- */

typedef struct {
    limit_t   *L;
    run_t     *run;
    latency_t *lat;
    int        conc;
    int        outstanding;
} cfg_t;

static void s_on_result(void *arg, const uint8_t *id, const uint8_t *body, size_t len)
{
    cfg_t   *c = arg;
    limit_t *L = c->L;
    int      k = 0;
    while (k < c->conc && !(L->jobs[k].state == 2 && memcmp(L->jobs[k].id, id, ID_BYTES) == 0)) k++;
    if (k == c->conc) return; /* not ours (a job from an earlier configuration's drain) */
    uint64_t now = clock_mono_us();
    result_t res;
    char     err[128], what[160];
    result_init(&res);
    int ok = result_decode(body, len, &res, err, sizeof err) == 0 && res.status == ST_OK;
    if (!ok)
        snprintf(what, sizeof what, "%s: %s", status_name(res.status),
                 res.error.message ? res.error.message : err);
    result_clear(&res);
    run_answer(c->run, c->lat, L->jobs[k].started_us, now, ok, what);
    if (run_accepting(c->run, now) && L->pace_ms > 0) {
        L->jobs[k].state = 3; /* the next request starts after the pause */
        L->jobs[k].started_us = now + (uint64_t)(L->pace_ms * 1000);
    } else if (run_accepting(c->run, now)) {
        s_enqueue(L, k, now);
    } else {
        L->jobs[k].state = 0;
        c->outstanding--;
    }
}

static void s_run_config(limit_t *L, const char *snippet, int conc)
{
    const profile_t *p = profile_find(SERVICE);
    jobspec_t        spec;
    jobspec_init(&spec);
    spec.tenant = "bench";
    spec.service = (char *)SERVICE;
    spec.code = (char *)snippet;
    spec.code_len = strlen(snippet);
    spec.limits.wall_ms = p->defaults.wall_ms; /* as the front-end fills an execute_code call */
    spec.limits.cpu_ms = spec.limits.wall_ms;
    spec.limits.memory_mb = p->defaults.memory_mb;
    profile_apply_limits(p, &spec.limits);
    spec.submitted_ms = clock_wall_ms();
    buf_t body;
    buf_init(&body);
    jobspec_encode(&spec, &body);

    run_t      run;
    latency_t *lat = latency_new();
    cfg_t      c = {L, &run, lat, conc, conc};
    struct rusage   self0, self1;
    proctree_cpu_t  cpu0, cpu1;
    int             sampled = 0;
    run_begin(&run, L->warmup, L->seconds, L->drain, conc, L->window_answers);
    L->q_head = L->q_len = 0;
    for (int k = 0; k < conc; k++) s_enqueue(L, k, run.start_us);
    s_dispatch(L, &body);
    for (;;) {
        uint64_t now = clock_mono_us();
        run_tick(&run, now);
        if (!sampled && now >= run.window_us) {
            proctree_cpu(L->pid, &cpu0);
            getrusage(RUSAGE_SELF, &self0);
            sampled = 1;
        }
        if (sampled == 1 && now >= run.end_us) {
            proctree_cpu(L->pid, &cpu1);
            getrusage(RUSAGE_SELF, &self1);
            sampled = 2;
        }
        if (sampled == 2 && c.outstanding == 0) break;
        if (now >= run.give_up_us || bench_stop) {
            run.lost += (uint64_t)c.outstanding;
            run.errors += (uint64_t)c.outstanding;
            snprintf(run.first_error, sizeof run.first_error, "%d jobs never answered", c.outstanding);
            for (int k = 0; k < conc; k++) L->jobs[k].state = 0;
            break;
        }
        if (s_pump(L, L->pace_ms > 0 ? 1 : 20, s_on_result, &c) < 0) break;
        now = clock_mono_us();
        for (int k = 0; k < conc; k++)
            if (L->jobs[k].state == 3 && L->jobs[k].started_us <= now) {
                if (run_accepting(&run, now)) {
                    s_enqueue(L, k, now);
                } else {
                    L->jobs[k].state = 0;
                    c.outstanding--;
                }
            }
        s_dispatch(L, &body);
    }
    if (sampled < 2) {
        proctree_cpu(L->pid, &cpu1);
        getrusage(RUSAGE_SELF, &self1);
        if (!sampled) cpu0 = cpu1, self0 = self1;
    }
    double answers = (double)run.done_in_window;
    char   extra[2048];
    proctree_cpu_json(extra, sizeof extra - 200, &cpu0, &cpu1, answers);
    double self_s = (double)(self1.ru_utime.tv_sec - self0.ru_utime.tv_sec + self1.ru_stime.tv_sec -
                             self0.ru_stime.tv_sec) +
                    (double)(self1.ru_utime.tv_usec - self0.ru_utime.tv_usec + self1.ru_stime.tv_usec -
                             self0.ru_stime.tv_usec) / 1e6;
    size_t len = strlen(extra);
    snprintf(extra + len, sizeof extra - len, ",\"driver_cpu_ms_per_exec\":%.3f,\"slots\":%ld",
             self_s * 1000.0 / (answers > 0 ? answers : 1), L->slots);
    buf_t out;
    buf_init(&out);
    latency_report(&out, "limit", snippet, conc, &run, lat, extra);
    printf("%s\n", (const char *)out.data);
    fflush(stdout);
    buf_free(&out);
    buf_free(&body);
    latency_destroy(&lat);
}

/* ---- memory: the zygote, an idle pooled child, and a child running a job ------------------ */

typedef struct {
    int      answered;
    uint8_t *id;
} mem_wait_t;

static void s_on_sleep_result(void *arg, const uint8_t *id, const uint8_t *body, size_t len)
{
    (void)body, (void)len;
    mem_wait_t *w = arg;
    if (memcmp(id, w->id, ID_BYTES) == 0) w->answered = 1;
}

static void s_smaps_json(buf_t *out, const char *name, pid_t pid)
{
    smaps_t s;
    if (pid <= 0 || smaps_read(pid, &s) < 0) {
        buf_printf(out, ",\"%s\":null", name);
        return;
    }
    buf_printf(out, ",\"%s\":{\"pid\":%d,\"rss_kb\":%ld,\"pss_kb\":%ld,\"private_dirty_kb\":%ld,"
                    "\"private_clean_kb\":%ld,\"shared_clean_kb\":%ld,\"anonymous_kb\":%ld}",
               name, (int)pid, s.rss_kb, s.pss_kb, s.private_dirty_kb, s.private_clean_kb,
               s.shared_clean_kb, s.anonymous_kb);
}

static void s_memory(limit_t *L)
{
    pid_t kids[64], zygote = 0;
    int   n = proc_children(L->pid, kids, 64);
    for (int i = 0; i < n && !zygote; i++) {
        char label[32];
        proc_label(kids[i], label, sizeof label);
        if (strcmp(label, "snakepit-zygote") == 0) zygote = kids[i];
    }
    for (int i = 0; i < 10; i++) s_pump(L, 50, NULL, NULL); /* let the pool refill */
    pid_t idle[256];
    int   n_idle = zygote ? proc_children(zygote, idle, 256) : 0;

    /* one job that sleeps: its process is looked at while it runs */
    job_t   *j = &L->jobs[0];
    buf_t    body;
    jobspec_t spec;
    jobspec_init(&spec);
    spec.tenant = "bench";
    spec.service = (char *)SERVICE;
    spec.code = SLEEP_CODE;
    spec.code_len = strlen(SLEEP_CODE);
    buf_init(&body);
    jobspec_encode(&spec, &body);
    id_new(j->id);
    for (int i = 0; i < 100 && L->credit <= 0; i++) s_pump(L, 50, NULL, NULL);
    s_send_job(L, j, &body);
    mem_wait_t w = {0, j->id};
    for (int i = 0; i < 10; i++) s_pump(L, 50, s_on_sleep_result, &w);
    pid_t running = 0, kids2[256];
    int   n2 = zygote ? proc_children(zygote, kids2, 256) : 0;
    for (int i = 0; i < n2 && !running; i++) {
        long nr = proc_syscall(kids2[i]);
        int  was_idle = 0;
        for (int k = 0; k < n_idle; k++) was_idle |= idle[k] == kids2[i];
        if (was_idle && nr >= 0 && nr != 0 /* read: an idle child waiting for its job */) running = kids2[i];
    }
    pid_t an_idle = 0;
    for (int i = 0; i < n2 && !an_idle; i++)
        if (kids2[i] != running && proc_syscall(kids2[i]) == 0) an_idle = kids2[i];
    buf_t out;
    buf_init(&out);
    buf_printf(&out, "{\"memory\":{\"pool_children\":%d", n_idle);
    s_smaps_json(&out, "executor_node", L->pid);
    s_smaps_json(&out, "zygote", zygote);
    s_smaps_json(&out, "idle_child", an_idle);
    s_smaps_json(&out, "running_job", running);
    buf_puts(&out, ",\"job_code\":");
    json_escape(&out, SLEEP_CODE);
    buf_puts(&out, "}}");
    for (int i = 0; i < 100 && !w.answered; i++) s_pump(L, 50, s_on_sleep_result, &w);
    printf("%s\n", (const char *)out.data);
    fflush(stdout);
    buf_free(&out);
    buf_free(&body);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    static limit_t L;
    L.executor = "build/bin/snakepit-executor";
    L.log_level = "warn";
    L.slots = sysconf(_SC_NPROCESSORS_ONLN);
    L.seconds = 2, L.warmup = 0.3, L.drain = 60, L.ready_timeout = 60;
    bench_parse_concurrency("1,8,64", &L.conc, MAX_CONC);
    static const struct option opts[] = {
        {"executor", 1, 0, 'e'}, {"slots", 1, 0, 's'},   {"pool", 1, 0, 'p'},
        {"concurrency", 1, 0, 'c'}, {"seconds", 1, 0, 't'}, {"warmup", 1, 0, 'w'},
        {"drain", 1, 0, 'd'}, {"window-answers", 1, 0, 'n'}, {"pace-ms", 1, 0, 'P'},    {"memory", 0, 0, 'm'},  {"log", 1, 0, 'l'},
        {"log-level", 1, 0, 'L'}, {"executor-arg", 1, 0, 'x'}, {"profile", 1, 0, 'R'}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'e': L.executor = optarg; break;
        case 's': L.slots = atol(optarg); break;
        case 'p': L.pool = atol(optarg); break;
        case 'R': SERVICE = optarg; break;
        case 'c':
            if (bench_parse_concurrency(optarg, &L.conc, MAX_CONC) < 0) {
                fprintf(stderr, "limit: bad --concurrency %s\n", optarg);
                return 64;
            }
            break;
        case 't': L.seconds = atof(optarg); break;
        case 'w': L.warmup = atof(optarg); break;
        case 'd': L.drain = atof(optarg); break;
        case 'n': L.window_answers = atol(optarg); break;
        case 'P': L.pace_ms = atof(optarg); break;
        case 'm': L.memory = 1; break;
        case 'l': L.log = optarg; break;
        case 'L': L.log_level = optarg; break;
        case 'x':
            if (L.n_extra < 16) L.extra[L.n_extra++] = optarg;
            break;
        default:
            fprintf(stderr, "usage: limit --executor PATH [--slots N] [--pool N] [--concurrency 1,8,64]\n"
                            "             [--seconds S] [--warmup S] [--drain S] [--window-answers N] [--pace-ms MS] [--memory] [--log FILE]\n"
                            "             [--log-level L] [--executor-arg ARG]... [--profile P] SNIPPET...\n");
            return o == 'h' ? 0 : 64;
        }
    }
    if (optind >= argc && !L.memory) {
        fprintf(stderr, "limit: no snippet given\n");
        return 64;
    }
    bench_stop_on_signals();
    signal(SIGPIPE, SIG_IGN);

    int port = s_free_port();
    if (port < 0) {
        fprintf(stderr, "limit: no free loopback port: %s\n", strerror(errno));
        return 1;
    }
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    L.pid = s_start_executor(&L, endpoint);
    if (L.pid < 0) {
        fprintf(stderr, "limit: fork: %s\n", strerror(errno));
        return 1;
    }
    L.ctx = zmq_ctx_new();
    L.sock = zmq_socket(L.ctx, ZMQ_ROUTER);
    int one = 1, zero = 0, hwm = 100000;
    zmq_setsockopt(L.sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(L.sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(L.sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(L.sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    int rc = 1;
    if (zmq_bind(L.sock, endpoint) < 0) {
        fprintf(stderr, "limit: bind %s: %s\n", endpoint, zmq_strerror(errno));
        goto out;
    }
    route_t route = {0};
    snprintf(route.tenant, sizeof route.tenant, "bench");
    buf_init(&L.route);
    route_encode(&route, &L.route);

    uint64_t give_up = clock_mono_us() + (uint64_t)(L.ready_timeout * 1e6);
    while (!(L.ready && L.credit > 0) && !bench_stop) {
        if (clock_mono_us() > give_up || waitpid(L.pid, NULL, WNOHANG) == L.pid) {
            fprintf(stderr, "limit: the executor did not register (see %s)\n", L.log ? L.log : "its stderr");
            goto out;
        }
        s_pump(&L, 100, NULL, NULL);
    }
    for (int i = optind; i < argc && !bench_stop; i++)
        for (int k = 0; k < L.conc.n && !bench_stop; k++) s_run_config(&L, argv[i], L.conc.v[k]);
    if (L.memory && !bench_stop) s_memory(&L);
    rc = bench_stop ? 130 : 0;
out:
    zmq_close(L.sock);
    zmq_ctx_term(L.ctx);
    s_stop_executor(&L);
    buf_free(&L.route);
    return rc;
}
