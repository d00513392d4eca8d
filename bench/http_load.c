/* bench/http_load.c — variant (b) of `make bench`, "the farm": `execute_code` calls through
 * the MCP front-end over Streamable HTTP, as an MCP client makes them.
 *
 * Why our own client rather than wrk: each call needs an MCP session first (initialize, then
 * notifications/initialized, then the Mcp-Session-Id header), the answer must be read to
 * tell an `ok` from an error, and the latency of every call is wanted, not wrk's histogram;
 * that is 400 lines of C with poll(2) and no dependency, where wrk would need a Lua script
 * and one more package. One session is shared by the C keep-alive connections, each with
 * one call in flight (HTTP/1.1 without pipelining), so C calls are outstanding at once.
 *
 *   http_load --url http://127.0.0.1:PORT/mcp --key KEY [--cpu-root PID]
 *             [--concurrency 1,8,64] [--seconds S] [--warmup S] [--drain S] [--window-answers N] [--pace-ms MS]
 *             [--sessions] [--atomic] SNIPPET...
 *
 * A call counts as done when the answer is HTTP 200 with a JSON-RPC result whose isError is
 * false (status `ok`); anything else is an error. With --cpu-root, the CPU of that process
 * and its descendants (snakepit up: Redis, broker, executor, zygote and jobs, front-end) is
 * reported per execution. With --sessions, each connection first makes a session of
 * its own (create_session, python.basic) and every call is a cell in it (execute_code with
 * session_id): C calls across C sessions; the sessions are closed after each configuration.
 * With --atomic, every such cell is atomic (execute_code's atomic: a backup of the session is
 * set aside for each cell), for the cost of an atomic cell over a plain one.
 * Loopback only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "latency.h"
#include "proctree.h"

#define MAX_CONC    1024
#define MCP_VERSION "2025-11-25"

typedef struct {
    int      fd;
    char     session[64]; /* --sessions: its session's id */
    buf_t    out;        /* the request being written */
    size_t   out_off;
    buf_t    in;         /* what has arrived */
    uint64_t started_us; /* 0: no call in flight */
    uint64_t next_us;    /* --pace-ms: when the next call may start (0: none waiting) */
} conn_t;

typedef struct {
    int    status;
    size_t len;          /* of the whole response in conn.in */
    char  *body;         /* malloc'd, NUL-terminated */
    size_t body_len;
    char   session[128]; /* Mcp-Session-Id, when sent */
    int    close;        /* Connection: close */
} response_t;

static struct {
    struct sockaddr_in addr;
    char               hostport[96];
    char               path[128];
    const char        *key;
    char               session[128];
    long               rpc_id;
    pid_t              cpu_root;
    conc_list_t conc;
    double             seconds, warmup, drain;
    long               window_answers;
    double             pace_ms;
    int                sessions; /* --sessions: every connection's calls are cells of its session */
    int                atomic;   /* --atomic: and each cell is atomic (execute_code's atomic) */
} G;


/* ---- HTTP/1.1, the little of it a JSON answer needs (RFC 9112) ----------------------------- */

static const char *s_header(const char *head, size_t head_len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    for (const char *p = memchr(head, '\n', head_len); p && p < head + head_len;) {
        p++;
        if ((size_t)(head + head_len - p) > nl + 1 && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            const char *e = v;
            while (e < head + head_len && *e != '\r' && *e != '\n') e++;
            *vlen = (size_t)(e - v);
            return v;
        }
        p = memchr(p, '\n', (size_t)(head + head_len - p));
    }
    return NULL;
}

/* 1 and *r filled when in holds a whole response, 0 when more is needed, -1 when malformed. */
static int s_parse(buf_t *in, response_t *r)
{
    memset(r, 0, sizeof *r);
    const char *d = (const char *)in->data;
    const char *end = in->len ? memmem(d, in->len, "\r\n\r\n", 4) : NULL;
    if (!end) return in->len > 65536 ? -1 : 0;
    size_t head = (size_t)(end - d) + 4;
    if (in->len < 12 || strncmp(d, "HTTP/1.", 7) != 0) return -1;
    r->status = atoi(d + 9);
    size_t      vl;
    const char *v = s_header(d, head, "Mcp-Session-Id", &vl);
    if (v && vl < sizeof r->session) memcpy(r->session, v, vl), r->session[vl] = '\0';
    v = s_header(d, head, "Connection", &vl);
    r->close = v && vl == 5 && strncasecmp(v, "close", 5) == 0;
    v = s_header(d, head, "Transfer-Encoding", &vl);
    if (v && vl >= 7 && strncasecmp(v, "chunked", 7) == 0) {
        buf_t  body;
        size_t p = head;
        buf_init(&body);
        for (;;) {
            const char *crlf = memmem(d + p, in->len - p, "\r\n", 2);
            if (!crlf) goto more;
            size_t n = strtoul(d + p, NULL, 16);
            p = (size_t)(crlf - d) + 2;
            if (n == 0) { /* trailers end with an empty line */
                const char *fin = memmem(d + p - 2, in->len - p + 2, "\r\n\r\n", 4);
                if (!fin) goto more;
                r->len = (size_t)(fin - d) + 4;
                break;
            }
            if (in->len < p + n + 2) goto more;
            buf_append(&body, d + p, n);
            p += n + 2;
        }
        r->body_len = body.len;
        r->body = buf_steal(&body, &r->body_len);
        if (!r->body) r->body = xstrdup("");
        return 1;
    more:
        buf_free(&body);
        return 0;
    }
    v = s_header(d, head, "Content-Length", &vl);
    size_t clen = v ? strtoul(v, NULL, 10) : 0;
    if (in->len < head + clen) return 0;
    r->len = head + clen;
    r->body = xstrndup(d + head, clen);
    r->body_len = clen;
    return 1;
}

static void s_request(buf_t *out, const char *json)
{
    buf_reset(out);
    buf_printf(out,
               "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
               G.path, G.hostport, G.key);
    if (G.session[0])
        buf_printf(out, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", G.session, MCP_VERSION);
    buf_printf(out, "Content-Length: %zu\r\n\r\n%s", strlen(json), json);
}

static int s_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0) return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&G.addr, sizeof G.addr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One blocking exchange on a fresh connection, for the session set-up. */
static int s_exchange(const char *json, response_t *r)
{
    int fd = s_connect();
    if (fd < 0) return -1;
    buf_t out, in;
    buf_init(&out);
    buf_init(&in);
    s_request(&out, json);
    int rc = write(fd, out.data, out.len) == (ssize_t)out.len ? 0 : -1;
    while (rc == 0) {
        buf_reserve(&in, 65536);
        ssize_t n = read(fd, in.data + in.len, 65536);
        if (n <= 0) {
            rc = -1;
            break;
        }
        in.len += (size_t)n;
        int p = s_parse(&in, r);
        if (p < 0) rc = -1;
        if (p != 0) break;
    }
    close(fd);
    buf_free(&out);
    buf_free(&in);
    return rc;
}

static int s_session(void)
{
    response_t r;
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"" MCP_VERSION "\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"snakepit-bench\",\"version\":\"1\"}}}";
    if (s_exchange(init, &r) < 0 || r.status != 200 || !r.session[0]) {
        fprintf(stderr, "http_load: initialize failed (HTTP %d): %.300s\n", r.status, r.body ? r.body : "");
        free(r.body);
        return -1;
    }
    snprintf(G.session, sizeof G.session, "%s", r.session);
    free(r.body);
    if (s_exchange("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r) < 0 ||
        r.status != 202) {
        fprintf(stderr, "http_load: notifications/initialized: HTTP %d\n", r.status);
        free(r.body);
        return -1;
    }
    free(r.body);
    return 0;
}

/* ---- one configuration --------------------------------------------------------------------- */

/* --sessions: a session for c (0), or -1 with the farm's answer on stderr. */
static int s_open_session(conn_t *c)
{
    response_t r;
    char *json = NULL;
    if (asprintf(&json, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"create_session\",\"arguments\":{\"profile\":\"python.basic\","
                        "\"memory_limit\":128}}}",
                 ++G.rpc_id) < 0)
        abort();
    int rc = s_exchange(json, &r);
    free(json);
    const char *p = rc == 0 && r.body ? strstr(r.body, "\"session_id\":\"") : NULL;
    if (!p || sscanf(p + 14, "%63[^\"]", c->session) != 1) {
        fprintf(stderr, "http_load: create_session failed (HTTP %d): %.300s\n", r.status,
                r.body ? r.body : "");
        free(r.body);
        return -1;
    }
    free(r.body);
    return 0;
}

static void s_close_session(conn_t *c)
{
    response_t r;
    char *json = NULL;
    if (!c->session[0]) return;
    if (asprintf(&json, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"close_session\",\"arguments\":{\"session_id\":\"%s\"}}}",
                 ++G.rpc_id, c->session) < 0)
        abort();
    if (s_exchange(json, &r) == 0) free(r.body);
    free(json);
    c->session[0] = '\0';
}

static void s_call(conn_t *c, const char *code_json, uint64_t now)
{
    char *json = NULL, with[128] = "";
    if (c->session[0])
        snprintf(with, sizeof with, ",\"session_id\":\"%s\"%s", c->session,
                 G.atomic ? ",\"atomic\":true" : "");
    if (asprintf(&json, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"execute_code\",\"arguments\":{\"code\":%s%s}}}",
                 ++G.rpc_id, code_json, with) < 0)
        abort();
    s_request(&c->out, json);
    free(json);
    c->out_off = 0;
    c->started_us = now;
    ssize_t n = write(c->fd, c->out.data, c->out.len); /* the rest, if any, when POLLOUT */
    if (n > 0) c->out_off = (size_t)n;
}

static int s_ok(const response_t *r)
{
    if (r->status != 200 || !r->body) return 0;
    const char *p = strstr(r->body, "\"isError\"");
    if (!p) return 0;
    p += 9;
    while (*p == ' ' || *p == ':') p++;
    return strncmp(p, "false", 5) == 0;
}

static void s_run_config(const char *snippet, int conc)
{
    buf_t code_json;
    buf_init(&code_json);
    json_escape(&code_json, snippet);
    conn_t        *conns = xcalloc((size_t)conc, sizeof *conns);
    struct pollfd *pfd = xcalloc((size_t)conc, sizeof *pfd);
    run_t          run;
    latency_t     *lat = latency_new();
    proctree_cpu_t cpu0 = {0}, cpu1 = {0};
    struct rusage  self0, self1;
    int            sampled = 0, active = 0;
    for (int i = 0; i < conc; i++) {
        buf_init(&conns[i].out);
        buf_init(&conns[i].in);
        conns[i].fd = s_connect();
        if (G.sessions && conns[i].fd >= 0 && s_open_session(&conns[i]) < 0) {
            close(conns[i].fd);
            conns[i].fd = -1;
        }
    }
    run_begin(&run, G.warmup, G.seconds, G.drain, conc, G.window_answers);
    for (int i = 0; i < conc; i++) {
        if (conns[i].fd < 0) {
            run_answer(&run, lat, 0, run.start_us, 0, "connect failed");
            continue;
        }
        s_call(&conns[i], (const char *)code_json.data, clock_mono_us());
        active++;
    }
    while (active > 0) {
        uint64_t now = clock_mono_us();
        run_tick(&run, now);
        if (!sampled && now >= run.window_us) {
            if (G.cpu_root) proctree_cpu(G.cpu_root, &cpu0);
            getrusage(RUSAGE_SELF, &self0);
            sampled = 1;
        }
        if (sampled == 1 && now >= run.end_us) {
            if (G.cpu_root) proctree_cpu(G.cpu_root, &cpu1);
            getrusage(RUSAGE_SELF, &self1);
            sampled = 2;
        }
        if (now >= run.give_up_us || bench_stop) {
            run.lost += (uint64_t)active;
            run.errors += (uint64_t)active;
            snprintf(run.first_error, sizeof run.first_error, "%d calls never answered", active);
            break;
        }
        for (int i = 0; i < conc; i++) {
            conn_t *c = &conns[i];
            pfd[i].fd = c->started_us ? c->fd : -1;
            pfd[i].events = c->out_off < c->out.len ? POLLOUT : POLLIN;
            pfd[i].revents = 0;
        }
        if (poll(pfd, (nfds_t)conc, G.pace_ms > 0 ? 1 : 20) < 0 && errno != EINTR) break;
        now = clock_mono_us();
        for (int i = 0; i < conc; i++) {
            conn_t *c = &conns[i];
            if (!c->next_us || c->next_us > now) continue;
            c->next_us = 0;
            if (run_accepting(&run, now)) s_call(c, (const char *)code_json.data, now);
            else active--;
        }
        for (int i = 0; i < conc; i++) {
            conn_t *c = &conns[i];
            if (!pfd[i].revents) continue;
            if (c->out_off < c->out.len) {
                ssize_t n = write(c->fd, c->out.data + c->out_off, c->out.len - c->out_off);
                if (n > 0) c->out_off += (size_t)n;
                else if (n < 0 && errno != EAGAIN && errno != EINTR) goto broken;
                continue;
            }
            buf_reserve(&c->in, 65536);
            ssize_t n = read(c->fd, c->in.data + c->in.len, 65536);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) goto broken;
            if (n < 0) continue;
            c->in.len += (size_t)n;
            response_t r;
            int        p = s_parse(&c->in, &r);
            if (p == 0) continue;
            if (p < 0) goto broken;
            char what[200];
            snprintf(what, sizeof what, "HTTP %d: %.150s", r.status, r.body);
            run_answer(&run, lat, c->started_us, now, s_ok(&r), what);
            memmove(c->in.data, c->in.data + r.len, c->in.len - r.len);
            c->in.len -= r.len;
            free(r.body);
            c->started_us = 0;
            if (r.close) {
                close(c->fd);
                c->fd = s_connect();
                c->in.len = 0;
            }
            if (run_accepting(&run, now) && c->fd >= 0 && G.pace_ms > 0)
                c->next_us = now + (uint64_t)(G.pace_ms * 1000);
            else if (run_accepting(&run, now) && c->fd >= 0)
                s_call(c, (const char *)code_json.data, now);
            else
                active--;
            continue;
        broken:
            run_answer(&run, lat, c->started_us, now, 0, "connection closed mid-call");
            close(c->fd);
            c->fd = s_connect();
            c->in.len = 0;
            c->started_us = 0;
            if (run_accepting(&run, now) && c->fd >= 0) s_call(c, (const char *)code_json.data, now);
            else active--;
        }
    }
    if (sampled < 2) {
        if (G.cpu_root) proctree_cpu(G.cpu_root, &cpu1);
        getrusage(RUSAGE_SELF, &self1);
        if (!sampled) cpu0 = cpu1, self0 = self1;
    }
    double answers = (double)run.done_in_window;
    char   extra[2048] = "";
    if (G.cpu_root) proctree_cpu_json(extra, sizeof extra - 200, &cpu0, &cpu1, answers);
    double self_s = (double)(self1.ru_utime.tv_sec - self0.ru_utime.tv_sec + self1.ru_stime.tv_sec -
                             self0.ru_stime.tv_sec) +
                    (double)(self1.ru_utime.tv_usec - self0.ru_utime.tv_usec + self1.ru_stime.tv_usec -
                             self0.ru_stime.tv_usec) / 1e6;
    size_t len = strlen(extra);
    snprintf(extra + len, sizeof extra - len, ",\"driver_cpu_ms_per_exec\":%.3f",
             self_s * 1000.0 / (answers > 0 ? answers : 1));
    buf_t out;
    buf_init(&out);
    latency_report(&out, G.atomic ? "farm_session_atomic" : G.sessions ? "farm_session" : "farm",
                   snippet, conc, &run, lat, extra);
    printf("%s\n", (const char *)out.data);
    fflush(stdout);
    buf_free(&out);
    for (int i = 0; i < conc; i++) {
        if (conns[i].fd >= 0) close(conns[i].fd);
        s_close_session(&conns[i]);
        buf_free(&conns[i].out);
        buf_free(&conns[i].in);
    }
    free(conns);
    free(pfd);
    buf_free(&code_json);
    latency_destroy(&lat);
}

/* ---- main ------------------------------------------------------------------------------------ */

static int s_parse_url(const char *url)
{
    char host[64];
    int  port = 0, used = 0;
    if (sscanf(url, "http://%63[^:/]:%d%n", host, &port, &used) < 2 || port <= 0 || port > 65535)
        return -1;
    snprintf(G.path, sizeof G.path, "%s", url[used] == '/' ? url + used : "/mcp");
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    G.addr.sin_family = AF_INET;
    G.addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &G.addr.sin_addr) != 1) return -1;
    if ((ntohl(G.addr.sin_addr.s_addr) >> 24) != 127) return -1; /* loopback only */
    snprintf(G.hostport, sizeof G.hostport, "%s:%d", host, port);
    return 0;
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    G.seconds = 2, G.warmup = 0.3, G.drain = 60;
    bench_parse_concurrency("1,8,64", &G.conc, MAX_CONC);
    static const struct option opts[] = {
        {"url", 1, 0, 'u'},     {"key", 1, 0, 'k'},    {"cpu-root", 1, 0, 'r'},
        {"concurrency", 1, 0, 'c'}, {"seconds", 1, 0, 't'}, {"warmup", 1, 0, 'w'},
        {"drain", 1, 0, 'd'}, {"window-answers", 1, 0, 'n'}, {"pace-ms", 1, 0, 'P'},   {"sessions", 0, 0, 'S'}, {"atomic", 0, 0, 'A'}, {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'u': url = optarg; break;
        case 'k': G.key = optarg; break;
        case 'r': G.cpu_root = (pid_t)atol(optarg); break;
        case 'c':
            if (bench_parse_concurrency(optarg, &G.conc, MAX_CONC) < 0) {
                fprintf(stderr, "http_load: bad --concurrency %s\n", optarg);
                return 64;
            }
            break;
        case 't': G.seconds = atof(optarg); break;
        case 'w': G.warmup = atof(optarg); break;
        case 'd': G.drain = atof(optarg); break;
        case 'n': G.window_answers = atol(optarg); break;
        case 'P': G.pace_ms = atof(optarg); break;
        case 'S': G.sessions = 1; break;
        case 'A': G.sessions = G.atomic = 1; break;
        default:
            fprintf(stderr, "usage: http_load --url http://127.0.0.1:PORT/mcp --key KEY [--cpu-root PID]\n"
                            "                 [--concurrency 1,8,64] [--seconds S] [--warmup S] [--drain S] [--window-answers N] [--pace-ms MS] [--sessions] [--atomic] SNIPPET...\n");
            return o == 'h' ? 0 : 64;
        }
    }
    if (!url || !G.key || optind >= argc) {
        fprintf(stderr, "http_load: --url, --key and at least one snippet are needed\n");
        return 64;
    }
    if (s_parse_url(url) < 0) {
        fprintf(stderr, "http_load: %s is not an http://127.x.y.z:PORT/ URL (loopback only)\n", url);
        return 64;
    }
    bench_stop_on_signals();
    signal(SIGPIPE, SIG_IGN);
    if (s_session() < 0) return 1;
    for (int i = optind; i < argc && !bench_stop; i++)
        for (int k = 0; k < G.conc.n && !bench_stop; k++) s_run_config(argv[i], G.conc.v[k]);
    return bench_stop ? 130 : 0;
}
