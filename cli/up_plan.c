/* cli/up_plan.c — see up_plan.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/profiles.h"
#include "up_plan.h"
#include "up_ports.h"

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(up_conf_t, http, "http", "HOST:PORT", "where the MCP endpoint listens"),
    CFG_OPT_STR(up_conf_t, state_dir, "state-dir", "DIR",
                "state, sockets, logs (default ~/.local/state/snakepit)"),
    CFG_OPT_INT(up_conf_t, slots, "slots", 1, 1024, "N",
                "sandbox slots on this machine (default: one per core)"),
    CFG_OPT_INT(up_conf_t, reserve_slots, "reserve-slots", 0, 64, "N",
                "more slots, kept for tenants with nothing running (snakepit-executor "
                "--reserve-slots)"),
    CFG_OPT_STR(up_conf_t, redis, "redis", "URL",
                "use this Redis instead of a private one (redis://, unix:// or "
                "redis-sentinel://host:port,host:port/master)"),
    CFG_OPT_INT(up_conf_t, redis_maxmemory_mb, "redis-maxmemory", 0, 1 << 24, "MB",
                "the private Redis's maxmemory (volatile-lru: only records are evicted); 0 for "
                "none"),
    CFG_OPT_LIST(up_conf_t, profiles, "profiles", "LIST",
                 "profiles the local executor serves (default: every profile whose libraries are "
                 "installed)"),
    CFG_OPT_STR(up_conf_t, executors, "executors", "ENDPOINT",
                "broker endpoint for executors (default: ipc in the state dir; tcp://0.0.0.0:5556 "
                "to add executor nodes on other machines)"),
    CFG_OPT_INT(up_conf_t, metrics_port, "metrics-port", 0, 65535, "PORT",
                "first of the /metrics ports: broker, executor, second broker (0: pick free "
                "ports; the default's ports, when taken, are replaced by free ones)"),
    CFG_OPT_STR(up_conf_t, port_range, "port-range", "LO-HI",
                "where the ports left to the farm (--metrics-port 0, a default port that is "
                "taken) are picked (default: 10000 up to the kernel's ephemeral range)"),
    CFG_OPT_INT(up_conf_t, brokers, "brokers", 1, 2, "N",
                "brokers to run: with 2, the executor serves both and the front-end fails over "
                "from the first to the second"),
    CFG_OPT_LIST(up_conf_t, disable_layer, "disable-layer", "LAYER",
                 "sandbox layer to switch off (see snakepit-executor --help)"),
    CFG_OPT_STR(up_conf_t, packages, "packages", "DIR|URL",
                "where jobs' dependencies may come from: a directory of wheels, or a package "
                "index URL (environments are built in STATE_DIR/envs)"),
    CFG_OPT_BOOL(up_conf_t, allow_remote, "allow-remote",
                 "allow plain HTTP on a non-loopback --http address (a TLS-terminating proxy, "
                 "or a network you trust, in front)"),
    CFG_OPT_STR(up_conf_t, tls_cert, "tls-cert", "FILE",
                "serve the MCP endpoint over HTTPS with this PEM certificate chain"),
    CFG_OPT_STR(up_conf_t, tls_key, "tls-key", "FILE", "the PEM private key for --tls-cert"),
    CFG_OPT_LIST(up_conf_t, egress_deny, "egress-deny", "LIST",
                 "more endpoints no job may reach, whatever its tenant's egress rules (HOST:PORT, "
                 "ADDR:PORT, CIDR); the farm's own — Redis, brokers, /metrics, the MCP "
                 "endpoint — are denied already"),
    CFG_OPT_STR(up_conf_t, egress_resolver, "egress-resolver", "ADDR[:PORT]",
                "the DNS resolver names jobs ask for are resolved with (default: the first "
                "nameserver of /etc/resolv.conf)"),
    CFG_OPT_STR(up_conf_t, log_level, "log-level", "LEVEL", "components' log level"),
    CFG_OPT_INT(up_conf_t, log_max_kb, "log-max-kb", 16, 1L << 30, "KB",
                "each component's log in STATE_DIR/logs is rotated at this size"),
    CFG_OPT_INT(up_conf_t, log_keep, "log-keep", 0, 100, "N",
                "rotated logs kept per component (NAME.log.1 … NAME.log.N)"),
    CFG_OPT_INT(up_conf_t, ready_timeout_s, "ready-timeout", 1, 3600, "S",
                "how long to wait for each part, and for the sandboxes to warm up"),
    CFG_OPT_END,
};

static void s_defaults(up_conf_t *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->http, sizeof d->http, "127.0.0.1:8765");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    d->slots = cpus > 0 ? cpus : 1;
    d->reserve_slots = 1;
    d->profiles[0] = '\0'; /* chosen once the options are read: what this machine can serve */
    d->metrics_port = 9101;
    d->brokers = 1;
    d->redis_maxmemory_mb = 1024;
    snprintf(d->log_level, sizeof d->log_level, "info");
    d->log_max_kb = 10240;
    d->log_keep = 5;
    d->ready_timeout_s = 60;
}

/* What the front-end would refuse, refused before anything starts, with the way out. */
static config_rc_t s_check_http(const up_conf_t *conf, char *err, size_t errlen)
{
    char endpoint[160];
    if (!conf->tls_cert[0] != !conf->tls_key[0]) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return CONFIG_ERROR;
    }
    const char *const files[] = {conf->tls_cert, conf->tls_key};
    for (size_t i = 0; i < 2; i++)
        if (files[i][0] && access(files[i], R_OK) < 0) {
            snprintf(err, errlen, "cannot read %s: %s", files[i], strerror(errno));
            return CONFIG_ERROR;
        }
    snprintf(endpoint, sizeof endpoint, "tcp://%s", conf->http);
    if (endpoint_is_local(endpoint) || conf->tls_cert[0] || conf->allow_remote) return CONFIG_OK;
    snprintf(err, errlen,
             "--http %s is reachable from other machines, and plain HTTP there would carry API "
             "keys in the clear: add --tls-cert FILE --tls-key FILE to serve HTTPS, or "
             "--allow-remote when a TLS-terminating proxy (or a network you trust) is in front",
             conf->http);
    return CONFIG_ERROR;
}

config_rc_t up_options(up_conf_t *conf, int argc, char **argv, char *err, size_t errlen)
{
    up_conf_t defaults;
    s_defaults(&defaults);
    *conf = defaults;
    config_rc_t rc = config_load(conf, s_opts, argc, argv, NULL, NULL, err, errlen);
    if (rc == CONFIG_HELP)
        config_usage(
            stdout, "snakepit up [options]",
            "Start a whole farm on this machine: a private Redis, the broker, an executor\n"
            "node and the MCP endpoint. Prints how to connect; Ctrl-C (or `snakepit down`\n"
            "from elsewhere) stops it all. An --http address other machines reach needs\n"
            "--tls-cert/--tls-key, or --allow-remote behind a TLS proxy.",
            s_opts, &defaults);
    if (rc == CONFIG_OK) {
        char dir[PATH_MAX];
        farm_state_dir(conf->state_dir, dir, sizeof dir);
        snprintf(conf->state_dir, sizeof conf->state_dir, "%s", dir);
        conf->http_asked =
            up_option_given(argc, argv, "http") || strcmp(conf->http, defaults.http) != 0;
        conf->metrics_asked = up_option_given(argc, argv, "metrics-port") ||
                              conf->metrics_port != defaults.metrics_port;
        rc = s_check_http(conf, err, errlen);
    }
    if (rc == CONFIG_OK && up_ports_range(conf->port_range, err, errlen) < 0) rc = CONFIG_ERROR;
    return rc;
}

/* ---- what this machine offers ------------------------------------------------------------- */

/* A keep() for profiles_join: the default profile, and each other one whose modules import
 * here, said once when they do not. The executor would leave such a profile unserved anyway
 * (and say why in its log); asking only for what imports keeps a developer's first `make run`
 * (which installs them) quiet. */
static int s_installed(const profile_t *p)
{
    if (p == profile_default()) return 1;
    buf_t probe;
    buf_init(&probe);
    buf_puts(&probe, "/usr/bin/python3 -I -c 'import ");
    int first = 1;
    for (const char *const *m = p->modules; *m; m++) {
        if (strchr(*m, '.')) continue; /* packages are enough */
        if (profile_module_is_the_sandboxs(*m)) continue; /* the executor brings it itself */
        buf_printf(&probe, "%s%s", first ? "" : ",", *m);
        first = 0;
    }
    buf_puts(&probe, "' >/dev/null 2>&1");
    int rc = system((const char *)probe.data);
    buf_free(&probe);
    if (rc != 0)
        log_warn("event=profile_unavailable profile=%s reason=\"its libraries are not "
                 "installed (deploy/install-deps.sh run)\"",
                 p->name);
    return rc == 0;
}

/* The second broker's endpoint next to the first's: a socket of its own in the state
 * directory, or the next TCP port. */
static void s_second(const char *first, char *out, size_t cap)
{
    const char *sock = strstr(first, ".sock");
    const char *colon = strrchr(first, ':');
    if (strncmp(first, "ipc://", 6) == 0 && sock)
        snprintf(out, cap, "%.*s-2%s", (int)(sock - first), first, sock);
    else if (strncmp(first, "tcp://", 6) == 0 && colon && atol(colon + 1) > 0)
        snprintf(out, cap, "%.*s:%ld", (int)(colon - first), first, atol(colon + 1) + 1);
    else
        snprintf(out, cap, "%s-2", first);
}

/* The MCP endpoint: the default port gives way to a free one when taken (up_ports.h); port 0
 * is picked here, so that the URL printed and the readiness check know it. */
static void s_http(up_conf_t *conf)
{
    char *colon = strrchr(conf->http, ':');
    if (!colon) return;
    long want = atol(colon + 1);
    long port = up_port_pick(want, conf->http_asked && want, "http");
    size_t at = (size_t)(colon + 1 - conf->http);
    if (port > 0 && port != want) snprintf(colon + 1, sizeof conf->http - at, "%ld", port);
}

/* The MCP URL: https with --tls-cert; a wildcard bind (0.0.0.0, [::]) is reached here through
 * loopback, and from other machines by this host's name. */
static void s_urls(const up_conf_t *conf, farm_info_t *f)
{
    const char *scheme = conf->tls_cert[0] ? "https" : "http";
    const char *colon = strrchr(conf->http, ':');
    int host_len = colon ? (int)(colon - conf->http) : (int)strlen(conf->http);
    const char *port = colon ? colon : "";
    int wildcard = (host_len == 7 && !strncmp(conf->http, "0.0.0.0", 7)) ||
                   (host_len == 4 && !strncmp(conf->http, "[::]", 4)) || host_len == 0;
    if (!wildcard) {
        snprintf(f->url, sizeof f->url, "%s://%s/mcp", scheme, conf->http);
        return;
    }
    char host[256] = "THIS-HOST";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(f->url, sizeof f->url, "%s://%s%s/mcp", scheme,
             conf->http[0] == '[' ? "[::1]" : "127.0.0.1", port);
    snprintf(f->remote_url, sizeof f->remote_url, "%s://%s%s/mcp", scheme, host, port);
}

/* The endpoints, ports and URLs of the farm, as ready.json will give them. */
static void s_farm(up_plan_t *p, const char *bin, const long metrics_port[3])
{
    up_conf_t *conf = &p->conf;
    farm_info_t *f = &p->farm;
    const char *dir = conf->state_dir;
    snprintf(f->state_dir, sizeof f->state_dir, "%s", dir);
    snprintf(f->snakepit, sizeof f->snakepit, "%s/snakepit", bin);
    f->pid = (long)getpid();
    snprintf(f->broker, sizeof f->broker, "ipc://%s/clients.sock", dir);
    if (conf->executors[0])
        snprintf(f->executors, sizeof f->executors, "%s", conf->executors);
    else
        snprintf(f->executors, sizeof f->executors, "ipc://%s/executors.sock", dir);
    snprintf(f->brokers, sizeof f->brokers, "%s", f->broker);
    snprintf(f->executors_all, sizeof f->executors_all, "%s", f->executors);
    if (conf->brokers > 1) {
        char second[PATH_MAX + 64];
        s_second(f->broker, second, sizeof second);
        snprintf(f->brokers, sizeof f->brokers, "%s,%s", f->broker, second);
        s_second(f->executors, second, sizeof second);
        snprintf(f->executors_all, sizeof f->executors_all, "%s,%s", f->executors, second);
    }
    if (p->private_redis)
        snprintf(f->redis, sizeof f->redis, "unix://%s/redis.sock", dir);
    else
        snprintf(f->redis, sizeof f->redis, "%s", conf->redis);
    s_urls(conf, f);
    /* a certificate the farm serves is also what a local client trusts it by (a self-signed
     * one, typically); the path absolute, for clients started elsewhere */
    if (conf->tls_cert[0] && !realpath(conf->tls_cert, f->ca_file))
        snprintf(f->ca_file, sizeof f->ca_file, "%s", conf->tls_cert);
    int ports[] = {FARM_METRICS_BROKER, FARM_METRICS_EXECUTOR, FARM_METRICS_BROKER2};
    for (int i = 0; i < (conf->brokers > 1 ? 3 : 2); i++)
        snprintf(f->metrics[ports[i]], sizeof f->metrics[0], "http://127.0.0.1:%ld/metrics",
                 metrics_port[i]);
    snprintf(f->metrics[FARM_METRICS_MCP], sizeof f->metrics[FARM_METRICS_MCP], "%.*s/metrics",
             (int)(strlen(f->url) - 4), f->url);
}

/* ---- each component's command line -------------------------------------------------------- */

/* The private Redis keeps everything in the state directory: an append-only file written
 * before each reply and fsynced every second (a crash of Redis loses nothing it answered; one
 * of the machine, at most a second), RDB snapshots besides. Under maxmemory it may evict only
 * keys with a TTL — records; tenants, keys, quotas, usage and snapshots have none (README
 * "Redis"). Hashes stay listpacks up to 4 KiB values: a record then takes about half the
 * memory (the budget in README "Failure and recovery" is measured with these settings). */
static void s_plan_redis(child_t *c, const char *dir, long maxmemory_mb)
{
    char sock[PATH_MAX + 16], maxmemory[32];
    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    snprintf(maxmemory, sizeof maxmemory, "%ldmb", maxmemory_mb);
    c->name = "redis";
    child_args(c, "redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
               "--dir", dir, "--dbfilename", "redis.rdb", NULL);
    /* records survive a restart of the farm, and session snapshots, which a client may rely
     * on, even a crash of Redis */
    child_args(c, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "60 100", NULL);
    child_args(c, "--maxmemory", maxmemory, "--maxmemory-policy", "volatile-lru", NULL);
    child_args(c, "--hash-max-listpack-value", "4096", NULL);
    child_args(c, "--daemonize", "no", NULL);
}

/* Broker number n (0, 1): the n-th endpoints of the farm's lists. */
static void s_plan_broker(const up_plan_t *p, child_t *c, int n, const char *bin,
                          const char *metrics)
{
    char exe[PATH_MAX + 32], clients[PATH_MAX + 64], executors[PATH_MAX + 64], instance[80];
    snprintf(exe, sizeof exe, "%s/snakepit-broker", bin);
    const char *cl = p->farm.brokers, *ex = p->farm.executors_all;
    for (int i = 0; i < n; i++) cl = strchr(cl, ',') + 1, ex = strchr(ex, ',') + 1;
    snprintf(clients, sizeof clients, "%.*s", (int)strcspn(cl, ","), cl);
    snprintf(executors, sizeof executors, "%.*s", (int)strcspn(ex, ","), ex);
    c->name = n ? "broker2" : "broker";
    child_args(c, exe, "--clients", clients, "--executors", executors, "--metrics", metrics,
               "--redis", p->farm.redis, "--log-level", p->conf.log_level, NULL);
    if (n) { /* its own snapshot: sp:metrics:broker:<host>-2 */
        char host[64] = "host";
        gethostname(host, sizeof host);
        host[sizeof host - 1] = '\0';
        snprintf(instance, sizeof instance, "%s-2", host);
        child_args(c, "--instance", instance, NULL);
    }
    if (p->hub) {
        char secret[PATH_MAX + 64], allowed[PATH_MAX + 64];
        snprintf(secret, sizeof secret, "%s/broker.key_secret", p->keys.dir);
        snprintf(allowed, sizeof allowed, "%s/allowed", p->keys.dir);
        child_args(c, "--curve-secret-file", secret, "--curve-allow-dir", allowed, NULL);
    }
}

/* The farm's own endpoints, which no job may reach whatever its tenant's egress rules: the
 * executor denies its brokers' executor endpoints, its /metrics and its Redis by itself; this
 * adds what only `up` knows: the MCP endpoint, the brokers' client endpoints and the other
 * /metrics ports (the front-end's is the MCP endpoint's). */
static void s_deny_add(buf_t *b, const char *hostport)
{
    /* "*" and an empty host listen everywhere: every address of the machine */
    int any = hostport[0] == ':' || !strncmp(hostport, "*:", 2);
    buf_printf(b, "%s%s%s", b->len ? "," : "", any ? "0.0.0.0" : "",
               any ? strchr(hostport, ':') : hostport);
}

static void s_egress_deny(const up_plan_t *p, const char (*metrics)[64], char *out, size_t cap)
{
    buf_t b;
    buf_init(&b);
    s_deny_add(&b, p->conf.http);
    char list[sizeof p->farm.brokers];
    snprintf(list, sizeof list, "%s", p->farm.brokers);
    for (char *save = NULL, *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save))
        if (!strncmp(ep, "tcp://", 6)) s_deny_add(&b, ep + 6);
    for (int i = 0; i < 3; i++) s_deny_add(&b, metrics[i]);
    if (p->conf.egress_deny[0]) s_deny_add(&b, p->conf.egress_deny);
    snprintf(out, cap, "%.*s", (int)b.len, (const char *)b.data);
    buf_free(&b);
}

static void s_plan_executor(const up_plan_t *p, child_t *c, const char *bin, const char *metrics,
                            const char *egress_deny)
{
    char exe[PATH_MAX + 32], slots[32], reserve[32];
    snprintf(exe, sizeof exe, "%s/snakepit-executor", bin);
    snprintf(slots, sizeof slots, "%ld", p->conf.slots);
    snprintf(reserve, sizeof reserve, "%ld", p->conf.reserve_slots);
    c->name = "executor";
    child_args(c, exe, "--broker", p->farm.executors_all, "--slots", slots, "--reserve-slots",
               reserve, "--profiles",
               p->conf.profiles, "--metrics", metrics, "--redis", p->farm.redis, NULL);
    if (p->hub) {
        char server[PATH_MAX + 64], secret[PATH_MAX + 64];
        snprintf(server, sizeof server, "%s/broker.key", p->keys.dir);
        snprintf(secret, sizeof secret, "%s/local-executor.key_secret", p->keys.dir);
        child_args(c, "--curve-server-key", server, "--curve-secret-file", secret, NULL);
    }
    if (p->conf.disable_layer[0]) child_args(c, "--disable-layer", p->conf.disable_layer, NULL);
    if (p->conf.packages[0]) {
        char envs[PATH_MAX + 8];
        snprintf(envs, sizeof envs, "%s/envs", p->conf.state_dir);
        child_args(c, "--packages", p->conf.packages, "--envs-dir", envs, NULL);
    }
    child_args(c, "--egress-deny", egress_deny, NULL);
    if (p->conf.egress_resolver[0]) child_args(c, "--egress-resolver", p->conf.egress_resolver, NULL);
    child_args(c, "--log-level", p->conf.log_level, NULL);
}

static void s_plan_mcp(const up_plan_t *p, child_t *c, const char *bin)
{
    char exe[PATH_MAX + 32];
    snprintf(exe, sizeof exe, "%s/snakepit-mcp", bin);
    c->name = "mcp";
    char key_file[PATH_MAX + 16];
    snprintf(key_file, sizeof key_file, "%s/local.key", p->conf.state_dir);
    child_args(c, exe, "--http", p->conf.http, "--broker", p->farm.brokers, "--redis", p->farm.redis,
               "--local-key-file", key_file, "--log-level", p->conf.log_level, NULL);
    if (p->conf.allow_remote) child_args(c, "--allow-remote", NULL);
    if (p->conf.tls_cert[0])
        child_args(c, "--tls-cert", p->conf.tls_cert, "--tls-key", p->conf.tls_key, NULL);
    if (p->hub) { /* in its environment: secrets stay off command lines */
        child_env(c, "SNAKEPIT_BROKER_CURVE_KEY=%s", p->keys.broker.public_key);
        child_env(c, "SNAKEPIT_CURVE_PUBLIC_KEY=%s", p->keys.mcp.public_key);
        child_env(c, "SNAKEPIT_CURVE_SECRET_KEY=%s", p->keys.mcp.secret_key);
    }
}

int up_plan(up_plan_t *p, char *err, size_t errlen)
{
    up_conf_t *conf = &p->conf;
    char bin[PATH_MAX];
    farm_bin_dir(bin, sizeof bin);
    p->private_redis = !conf->redis[0];
    if (!conf->profiles[0]) profiles_join(conf->profiles, sizeof conf->profiles, ",", s_installed);
    s_http(conf); /* first: a port asked for is held against the picks below */
    long metrics_port[3];
    static const char *const what[3] = {"broker metrics", "executor metrics", "broker2 metrics"};
    for (int i = 0; i < 3; i++) {
        metrics_port[i] = up_port_pick(conf->metrics_port ? conf->metrics_port + i : 0,
                                       conf->metrics_asked, what[i]);
        if (metrics_port[i] < 0) {
            snprintf(err, errlen, "no free port for the %s (--port-range %s)", what[i],
                     conf->port_range[0] ? conf->port_range : "default");
            return -1;
        }
    }
    s_farm(p, bin, metrics_port);
    p->hub = !endpoint_is_local(p->farm.executors);
    if (p->hub) {
        char why[400];
        if (hub_keys_load(&p->keys, conf->state_dir, why, sizeof why) < 0) {
            snprintf(err, errlen, "CURVE keys for a multi-machine farm: %s", why);
            return -1;
        }
        snprintf(p->farm.curve_broker_key, sizeof p->farm.curve_broker_key, "%s/broker.key",
                 p->keys.dir);
        snprintf(p->farm.curve_client_cert, sizeof p->farm.curve_client_cert,
                 "%s/local-cli.key_secret", p->keys.dir);
    }
    char listen[3][64];
    for (int i = 0; i < 3; i++)
        snprintf(listen[i], sizeof listen[i], "127.0.0.1:%ld", metrics_port[i]);
    if (p->private_redis)
        s_plan_redis(&p->child[UP_REDIS], conf->state_dir, conf->redis_maxmemory_mb);
    s_plan_broker(p, &p->child[UP_BROKER], 0, bin, listen[0]);
    if (conf->brokers > 1) s_plan_broker(p, &p->child[UP_BROKER2], 1, bin, listen[2]);
    char deny[4096];
    s_egress_deny(p, (const char(*)[64])listen, deny, sizeof deny);
    s_plan_executor(p, &p->child[UP_EXECUTOR], bin, listen[1], deny);
    s_plan_mcp(p, &p->child[UP_MCP], bin);
    for (int i = 0; i < UP_CHILDREN; i++)
        if (p->child[i].name)
            snprintf(p->child[i].log, sizeof p->child[i].log, "%s/logs/%s.log", conf->state_dir,
                     p->child[i].name);
    return 0;
}

void up_plan_free(up_plan_t *p)
{
    for (int i = 0; i < UP_CHILDREN; i++) child_free(&p->child[i]);
    hub_keys_clear(&p->keys);
}
