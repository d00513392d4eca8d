/* executor-node/node/main.c — snakepit-executor: the node process. Its zygotes are a separate
 * binary, snakepit-zygote, started by the node. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/profiles.h"
#include "proto/job.h"
#include "proto/wire.h"
#include "node.h"

static const cfg_opt_t s_node_opts[] = {
    CFG_OPT_LIST(node_conf_t, broker, "broker", "ENDPOINT",
                 "the broker's executor endpoint; several (comma list or repeated) to serve every "
                 "one of them, sharing this node's slots"),
    CFG_OPT_STR(node_conf_t, node_id, "node-id", "NAME", "name of this node (default: host-pid)"),
    CFG_OPT_LIST(node_conf_t, profiles, "profiles", "LIST", "profiles (services) to serve"),
    CFG_OPT_INT(node_conf_t, slots, "slots", 1, 1024, "N", "jobs at once (default: one per core)"),
    CFG_OPT_INT(node_conf_t, reserve_slots, "reserve-slots", 0, 64, "N",
                "more jobs at once, kept for tenants with nothing running, so that one call does "
                "not wait behind another tenant's flood (0: none)"),
    CFG_OPT_INT(node_conf_t, pool, "pool", 0, 64, "N",
                "warm children kept ready per profile (0: slots + reserve + 1)"),
    CFG_OPT_LIST(node_conf_t, disable_layer, "disable-layer", "LAYER",
                 "switch a sandbox layer off (rlimits, namespaces, landlock, uid, nnp, seccomp, "
                 "python); for hosts that lack it"),
    CFG_OPT_INT(node_conf_t, heartbeat_ms, "heartbeat-ms", 100, 60000, "MS", "heartbeat interval"),
    CFG_OPT_INT(node_conf_t, liveness, "liveness", 2, 100, "N", "missed heartbeats before reconnecting"),
    CFG_OPT_INT(node_conf_t, run_uid_host, "run-uid", 1, 4294967294L, "UID",
                "host uid jobs run as when started as root"),
    CFG_OPT_INT(node_conf_t, run_gid_host, "run-gid", 1, 4294967294L, "GID",
                "host gid jobs run as when started as root"),
    CFG_OPT_STR(node_conf_t, python, "python", "PATH", "Python program CPython finds its stdlib from"),
    CFG_OPT_INT(node_conf_t, output_max, "output-max", 4096, 64L << 20, "BYTES",
                "most bytes a job may print per stream"),
    CFG_OPT_INT(node_conf_t, recycle_jobs, "recycle-jobs", 0, 1L << 40, "N",
                "restart a zygote after N jobs (0: never)"),
    CFG_OPT_INT(node_conf_t, recycle_s, "recycle-s", 0, 1L << 30, "S",
                "restart a zygote after S seconds (0: never)"),
    CFG_OPT_STR(node_conf_t, log_level, "log-level", "LEVEL", "debug, info, warn, error"),
    CFG_OPT_STR(node_conf_t, curve_server_key, "curve-server-key", "KEY|FILE",
                "the broker's CURVE public key (Z85, or its .key file): turns CURVE on"),
    CFG_OPT_STR(node_conf_t, curve_secret_file, "curve-secret-file", "FILE",
                "this node's CURVE key pair (snakepit keygen NAME.key_secret)"),
    CFG_OPT_STR(node_conf_t, metrics, "metrics", "HOST:PORT", "serve Prometheus /metrics here (\"off\": none)"),
    CFG_OPT_STR(node_conf_t, redis, "redis", "URL",
                "publish a snapshot to sp:metrics:executor:NODE every second (redis://, unix:// or "
                "redis-sentinel://host:port,host:port/master)"),
    CFG_OPT_INT(node_conf_t, max_sessions, "max-sessions", 0, WIRE_MAX_SESSIONS, "N",
                "sessions kept at once on this node (0: none)"),
    CFG_OPT_INT(node_conf_t, session_pool, "session-pool", 0, 64, "N",
                "children kept forked ahead for new sessions, per profile"),
    CFG_OPT_INT(node_conf_t, session_idle_s, "session-idle-s", 1, JOB_MAX_IDLE_S, "S",
                "a session's idle timeout when it names none"),
    CFG_OPT_INT(node_conf_t, session_max_idle_s, "session-max-idle-s", 1, JOB_MAX_IDLE_S, "S",
                "the longest idle timeout a session may name"),
    CFG_OPT_INT(node_conf_t, session_grace_ms, "session-grace-ms", 0, 600000, "MS",
                "a cell past its timeout gets KeyboardInterrupt, and is killed (its session with it) this long after"),
    CFG_OPT_INT(node_conf_t, session_evict_free_mb, "session-evict-free-mb", 0, 1L << 30, "MB",
                "below this much free memory, end idle sessions, least recently used first (0: never)"),
    CFG_OPT_INT(node_conf_t, session_memory_mb, "session-memory-mb", 0, 1L << 30, "MB",
                "end idle sessions, least recently used first, while sessions hold more than this (0: no budget)"),
    CFG_OPT_INT(node_conf_t, session_checkpoint_s, "session-checkpoint-s", 0, 86400, "S",
                "checkpoint a session to Redis (--redis) once it has been idle this long after "
                "a job, so that it resumes from there if this executor dies (0: never; sessions "
                "freed for idleness, memory or a drain are checkpointed whatever this is)"),
    CFG_OPT_STR(node_conf_t, packages, "packages", "DIR|URL",
                "package source for jobs' dependencies: a directory of wheels, or an index URL "
                "(none: only the profiles' own packages)"),
    CFG_OPT_STR(node_conf_t, envs_dir, "envs-dir", "DIR",
                "where dependency environments are built and kept"),
    CFG_OPT_INT(node_conf_t, max_env_zygotes, "max-env-zygotes", 0, 64, "N",
                "warm zygotes for dependency environments at once (idle ones make room)"),
    CFG_OPT_INT(node_conf_t, env_idle_s, "env-idle-s", 1, 86400 * 7, "S",
                "an environment's zygote is stopped after S idle seconds"),
    CFG_OPT_INT(node_conf_t, build_timeout_s, "build-timeout-s", 5, 3600, "S",
                "the most an environment build may take"),
    CFG_OPT_BOOL(node_conf_t, build_from_source, "build-from-source",
                 "let dependency builds build source distributions (sdists run their own build "
                 "code; every build runs jailed either way); off: wheels only"),
    CFG_OPT_BOOL(node_conf_t, egress, "egress",
                 "let jobs whose tenant has egress rules reach the network through the egress "
                 "process, snakepit-egress (needs the namespaces layer; tenants without rules "
                 "never have network either way)"),
    CFG_OPT_INT(node_conf_t, egress_port, "egress-port", 1, 65535, "PORT",
                "the egress proxy's port on 127.0.0.1 inside each sandbox"),
    CFG_OPT_INT(node_conf_t, egress_pool, "egress-pool", 0, 64, "N",
                "children kept forked ahead for jobs with network egress, per profile"),
    CFG_OPT_STR(node_conf_t, egress_resolver, "egress-resolver", "ADDR[:PORT]",
                "the DNS resolver the egress process asks (default: the first nameserver of "
                "/etc/resolv.conf)"),
    CFG_OPT_LIST(node_conf_t, egress_deny, "egress-deny", "LIST",
                 "more of the farm's own endpoints (HOST:PORT, ADDR:PORT, CIDR), denied to every "
                 "job whatever its tenant's rules; the node adds its brokers, /metrics and Redis"),
    CFG_OPT_INT(node_conf_t, egress_max_bytes, "egress-max-bytes", 1, 1L << 40, "BYTES",
                "a job's network bytes, in and out together, at most (a tenant's cap may be "
                "lower); past it the job ends egress_limit"),
    CFG_OPT_INT(node_conf_t, egress_max_conns, "egress-max-conns", 1, 1 << 20, "N",
                "a job's network connections over its life, at most"),
    CFG_OPT_INT(node_conf_t, egress_idle_s, "egress-idle-s", 1, 86400, "S",
                "close a network connection idle this long"),
    CFG_OPT_INT(node_conf_t, egress_tenant_open, "egress-tenant-open", 1, 1 << 20, "N",
                "network connections one tenant may have open at once on this node"),
    CFG_OPT_INT(node_conf_t, drain_grace_s, "drain-grace-s", 0, 86400, "S",
                "on SIGTERM or SIGINT (or POST /drain to the metrics listener, from this machine) "
                "drain: tell the brokers, take no new job, give the running ones S seconds to "
                "finish, then exit (0: stop at once; a second signal stops at once)"),
    CFG_OPT_LIST(node_conf_t, test_missing_module, "test-missing-module", "PROFILE:MODULE",
                 "for tests only: PROFILE's zygote imports MODULE in its warm-up, so that it fails "
                 "as with a missing library and the node serves the other profiles"),
    CFG_OPT_END,
};

int main(int argc, char **argv)
{
    node_conf_t conf, defaults;
    node_conf_defaults(&defaults);
    conf = defaults;
    char err[256];
    switch (config_load(&conf, s_node_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP: {
        char names[256], about[640];
        profiles_join(names, sizeof names, ", ", NULL);
        snprintf(about, sizeof about,
                 "An executor node: serves sandboxed Python jobs from the broker. One warm\n"
                 "zygote per profile forks a fresh, rlimited, namespaced, Landlocked,\n"
                 "seccomp-filtered child for every job. A profile whose libraries are not\n"
                 "installed is not served (the log and /metrics say why); the others are.\n"
                 "\nProfiles: %s.", names);
        config_usage(stdout, "snakepit-executor [options]", about, s_node_opts, &defaults);
        return 0;
    }
    case CONFIG_ERROR: fprintf(stderr, "snakepit-executor: %s\n", err); return 2;
    case CONFIG_OK: break;
    }
    log_level_t level;
    if (log_level_parse(conf.log_level, &level) < 0) {
        fprintf(stderr, "snakepit-executor: unknown log level '%s'\n", conf.log_level);
        return 2;
    }
    log_init("executor", level);
    if (!conf.node_id[0]) {
        char host[64] = "node";
        gethostname(host, sizeof host - 1);
        snprintf(conf.node_id, sizeof conf.node_id, "%.40s-%d", host, (int)getpid());
        for (char *c = conf.node_id; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '-' || *c == '.' || *c == '_'))
                *c = '-';
    }
    return node_main(&conf);
}
