/* bench/spawn_load.c — drives variant (c) of `make bench`, "the old design": one fresh
 * `/usr/bin/python3 -I bench/subprocess_worker.py` per execution, the code sent as a JSON
 * envelope on its stdin, the answer read as JSON from its stdout — what the Python sandbox
 * servers snakepit replaces do for every call. C workers run at once, each starting the next
 * interpreter as soon as its previous one has answered and been reaped.
 *
 *   spawn_load [--python /usr/bin/python3] [--flags -I] [--worker bench/subprocess_worker.py]
 *              [--concurrency 1,8,64] [--seconds S] [--warmup S] [--drain S] [--window-answers N] SNIPPET...
 *
 * At the end of the counting window the interpreters still running are killed, not waited
 * for: they would only add a start-up time to every configuration.
 *
 * The spawn itself is posix_spawn (vfork + exec), cheaper than the fork of a Python server
 * process the real servers pay: the baseline gets the benefit of the doubt. CPU per
 * execution is the children's (RUSAGE_CHILDREN) plus this driver's; max_rss_kb is the
 * average peak resident set of one interpreter. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "latency.h"

#define MAX_CONC  1024
#define WALL_S    30 /* the servers' default timeout; the parent kills past it */

typedef struct {
    pid_t    pid;        /* 0: idle */
    int      out;        /* the child's stdout, read end */
    buf_t    answer;
    uint64_t started_us;
} worker_t;

static struct {
    const char *python, *flags, *worker;
    conc_list_t conc;
    double      seconds, warmup, drain;
    long        window_answers;
    double      rss_kb_sum;
    long        rss_n;
} G;



static int s_spawn(worker_t *w, const char *envelope, size_t len)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0) return -1;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]), close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)G.python, (char *)G.flags, (char *)G.worker, NULL};
    if (!G.flags[0]) argv[1] = (char *)G.worker, argv[2] = NULL;
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL};
    int   rc = posix_spawn(&w->pid, G.python, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]), close(out[0]);
        w->pid = 0;
        errno = rc;
        return -1;
    }
    /* an envelope is far below a pipe's 64 KiB: this write does not wait for the child */
    if (write(in[1], envelope, len) != (ssize_t)len) {
        close(in[1]);
        close(out[0]);
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
        w->pid = 0;
        return -1;
    }
    close(in[1]);
    w->out = out[0];
    buf_reset(&w->answer);
    return 0;
}

/* The child closed its stdout: reap it and judge its answer. */
static int s_finish(worker_t *w, char *what, size_t cap)
{
    int           status = 0;
    struct rusage ru;
    close(w->out);
    w->out = -1;
    if (wait4(w->pid, &status, 0, &ru) == w->pid) {
        G.rss_kb_sum += (double)ru.ru_maxrss;
        G.rss_n++;
    }
    w->pid = 0;
    const char *a = w->answer.len ? (const char *)w->answer.data : "";
    int         ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(a, "\"status\":\"ok\"");
    if (!ok) snprintf(what, cap, "exit status %d: %.150s", status, a);
    return ok;
}

static double s_cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void s_run_config(const char *snippet, int conc)
{
    buf_t env;
    buf_init(&env);
    buf_puts(&env, "{\"code\":");
    json_escape(&env, snippet);
    buf_printf(&env, ",\"timeout\":%d,\"memory_mb\":256}", WALL_S);
    worker_t      *ws = xcalloc((size_t)conc, sizeof *ws);
    struct pollfd *pfd = xcalloc((size_t)conc, sizeof *pfd);
    run_t          run;
    latency_t     *lat = latency_new();
    double         kids0 = 0, kids1 = 0, self0 = 0, self1 = 0;
    int            sampled = 0, active = 0;
    G.rss_kb_sum = 0, G.rss_n = 0;
    run_begin(&run, G.warmup, G.seconds, G.drain, conc, G.window_answers);
    for (int i = 0; i < conc; i++) {
        buf_init(&ws[i].answer);
        ws[i].out = -1;
        ws[i].started_us = clock_mono_us();
        if (s_spawn(&ws[i], (const char *)env.data, env.len) < 0) run_answer(&run, lat, 0, 0, 0, "spawn failed");
        else active++;
    }
    while (active > 0) {
        uint64_t now = clock_mono_us();
        run_tick(&run, now);
        if (!sampled && now >= run.window_us) {
            kids0 = s_cpu_s(RUSAGE_CHILDREN), self0 = s_cpu_s(RUSAGE_SELF);
            sampled = 1;
        }
        if (sampled == 1 && now >= run.end_us) {
            kids1 = s_cpu_s(RUSAGE_CHILDREN), self1 = s_cpu_s(RUSAGE_SELF);
            sampled = 2;
        }
        if (sampled == 2) {
            /* The window is over: the interpreters still starting are not waited for (each
             * would hold the run for a whole start-up), just stopped; they count nowhere. */
            for (int i = 0; i < conc; i++)
                if (ws[i].pid > 0) {
                    kill(ws[i].pid, SIGKILL);
                    waitpid(ws[i].pid, NULL, 0);
                    close(ws[i].out);
                    ws[i].pid = 0;
                }
            break;
        }
        if (now >= run.give_up_us || bench_stop) {
            for (int i = 0; i < conc; i++)
                if (ws[i].pid > 0) {
                    kill(ws[i].pid, SIGKILL);
                    waitpid(ws[i].pid, NULL, 0);
                    close(ws[i].out);
                    ws[i].pid = 0;
                }
            run.lost += (uint64_t)active;
            run.errors += (uint64_t)active;
            snprintf(run.first_error, sizeof run.first_error, "%d interpreters never answered", active);
            break;
        }
        for (int i = 0; i < conc; i++) {
            pfd[i].fd = ws[i].pid > 0 ? ws[i].out : -1;
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
            /* the parent's timeout, as subprocess.run(timeout=...) does it */
            if (ws[i].pid > 0 && now - ws[i].started_us > WALL_S * 1000000ull) kill(ws[i].pid, SIGKILL);
        }
        if (poll(pfd, (nfds_t)conc, 20) < 0 && errno != EINTR) break;
        for (int i = 0; i < conc; i++) {
            worker_t *w = &ws[i];
            if (!pfd[i].revents || w->pid <= 0) continue;
            buf_reserve(&w->answer, 65536);
            ssize_t n = read(w->out, w->answer.data + w->answer.len, 65536);
            if (n > 0) {
                w->answer.len += (size_t)n;
                w->answer.data[w->answer.len] = '\0';
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            char what[200];
            int  ok = s_finish(w, what, sizeof what);
            now = clock_mono_us();
            run_answer(&run, lat, w->started_us, now, ok, what);
            if (!run_accepting(&run, now)) {
                active--;
                continue;
            }
            w->started_us = now;
            if (s_spawn(w, (const char *)env.data, env.len) < 0) {
                run_answer(&run, lat, now, now, 0, "spawn failed");
                active--;
            }
        }
    }
    if (sampled < 2) {
        kids1 = s_cpu_s(RUSAGE_CHILDREN), self1 = s_cpu_s(RUSAGE_SELF);
        if (!sampled) kids0 = kids1, self0 = self1;
    }
    double answers = run.done_in_window > 0 ? (double)run.done_in_window : 1;
    char   extra[512];
    snprintf(extra, sizeof extra,
             ",\"cpu_ms_per_exec\":%.3f,\"cpu_ms_by_process\":{\"python3\":%.3f},"
             "\"driver_cpu_ms_per_exec\":%.3f,\"max_rss_kb\":%.0f,\"interpreter\":\"%s %s\"",
             (kids1 - kids0) * 1000.0 / answers, (kids1 - kids0) * 1000.0 / answers,
             (self1 - self0) * 1000.0 / answers, G.rss_n ? G.rss_kb_sum / (double)G.rss_n : 0,
             G.python, G.flags);
    buf_t out;
    buf_init(&out);
    latency_report(&out, "subprocess", snippet, conc, &run, lat, extra);
    printf("%s\n", (const char *)out.data);
    fflush(stdout);
    buf_free(&out);
    for (int i = 0; i < conc; i++) buf_free(&ws[i].answer);
    free(ws);
    free(pfd);
    buf_free(&env);
    latency_destroy(&lat);
}

int main(int argc, char **argv)
{
    G.python = "/usr/bin/python3", G.flags = "-I", G.worker = "bench/subprocess_worker.py";
    G.seconds = 2, G.warmup = 0.3, G.drain = 60;
    bench_parse_concurrency("1,8,64", &G.conc, MAX_CONC);
    static const struct option opts[] = {
        {"python", 1, 0, 'p'},  {"flags", 1, 0, 'f'},   {"worker", 1, 0, 'W'},
        {"concurrency", 1, 0, 'c'}, {"seconds", 1, 0, 't'}, {"warmup", 1, 0, 'w'},
        {"drain", 1, 0, 'd'}, {"window-answers", 1, 0, 'n'},   {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'p': G.python = optarg; break;
        case 'f': G.flags = optarg; break;
        case 'W': G.worker = optarg; break;
        case 'c':
            if (bench_parse_concurrency(optarg, &G.conc, MAX_CONC) < 0) {
                fprintf(stderr, "spawn_load: bad --concurrency %s\n", optarg);
                return 64;
            }
            break;
        case 't': G.seconds = atof(optarg); break;
        case 'w': G.warmup = atof(optarg); break;
        case 'd': G.drain = atof(optarg); break;
        case 'n': G.window_answers = atol(optarg); break;
        default:
            fprintf(stderr, "usage: spawn_load [--python PATH] [--flags F] [--worker FILE] [--concurrency 1,8,64]\n"
                            "                  [--seconds S] [--warmup S] [--drain S] [--window-answers N] SNIPPET...\n");
            return o == 'h' ? 0 : 64;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "spawn_load: no snippet given\n");
        return 64;
    }
    if (access(G.worker, R_OK) < 0) {
        fprintf(stderr, "spawn_load: %s: %s\n", G.worker, strerror(errno));
        return 1;
    }
    bench_stop_on_signals();
    signal(SIGPIPE, SIG_IGN);
    for (int i = optind; i < argc && !bench_stop; i++)
        for (int k = 0; k < G.conc.n && !bench_stop; k++) s_run_config(argv[i], G.conc.v[k]);
    return bench_stop ? 130 : 0;
}
