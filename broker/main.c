/* broker/main.c — snakepit-broker: options (common/config.h: defaults, --config file,
 * SNAKEPIT_* environment, flags), then the broker's loop until SIGTERM/SIGINT. SIGHUP
 * re-reads the CURVE allowlist. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "proto/wire.h"
#include "broker.h"

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(broker_conf_t, clients, "clients", "ENDPOINT",
                "client channel: front-ends, CLIs and benches submit here"),
    CFG_OPT_STR(broker_conf_t, executors, "executors", "ENDPOINT",
                "worker channel: executor nodes connect here"),
    CFG_OPT_STR(broker_conf_t, metrics, "metrics", "HOST:PORT",
                "serve Prometheus /metrics here (\"off\" for none)"),
    CFG_OPT_STR(broker_conf_t, redis, "redis", "URL",
                "publish a snapshot to sp:metrics:broker:INSTANCE every second (redis://, unix:// "
                "or redis-sentinel://host:port,host:port/master)"),
    CFG_OPT_STR(broker_conf_t, instance, "instance", "NAME",
                "this broker's name in Redis (default: host name)"),
    CFG_OPT_INT(broker_conf_t, max_queue, "max-queue", 1, 100000000, "N",
                "jobs queued across all services; beyond, SUBMIT is rejected"),
    CFG_OPT_INT(broker_conf_t, max_queue_per_tenant, "max-queue-per-tenant", 1, 100000000, "N",
                "jobs one tenant may have queued"),
    CFG_OPT_INT(broker_conf_t, max_queue_mb, "max-queue-mb", 1, 1 << 20, "MIB",
                "JobSpec bytes queued across all services"),
    CFG_OPT_INT(broker_conf_t, max_executors, "max-executors", 1, 1 << 20, "N",
                "executor connections"),
    CFG_OPT_INT(broker_conf_t, max_clients, "max-clients", 1, 1 << 24, "N",
                "client connections tracked"),
    CFG_OPT_INT(broker_conf_t, heartbeat_ms, "heartbeat-ms", 50, 60000, "MS",
                "heartbeat interval, both channels (PROTOCOL.md: 1000)"),
    CFG_OPT_INT(broker_conf_t, liveness, "liveness", 2, 100, "N",
                "silent heartbeat intervals before a peer counts as gone"),
    CFG_OPT_INT(broker_conf_t, service_grace_ms, "service-grace-ms", 0, 3600000, "MS",
                "how long jobs for a service with no executor wait (also after start)"),
    CFG_OPT_INT(broker_conf_t, lease_grace_ms, "lease-grace-ms", 0, 3600000, "MS",
                "past a running job's deadline before the broker answers `timeout`"),
    CFG_OPT_INT(broker_conf_t, quantum, "quantum", 1, 1000, "N",
                "fair queueing: jobs per tenant per round"),
    CFG_OPT_INT(broker_conf_t, hwm, "hwm", 100, 10000000, "N",
                "ZeroMQ high-water mark per peer, messages"),
    CFG_OPT_STR(broker_conf_t, curve_secret_file, "curve-secret-file", "FILE",
                "the broker's CURVE key pair (snakepit keygen NAME.key_secret): turns CURVE on"),
    CFG_OPT_STR(broker_conf_t, curve_allow_dir, "curve-allow-dir", "DIR",
                "directory of *.key public certificates allowed to connect"),
    CFG_OPT_BOOL(broker_conf_t, allow_plain_remote, "allow-plain-remote",
                 "allow unencrypted TCP on non-loopback addresses"),
    CFG_OPT_STR(broker_conf_t, log_level, "log-level", "LEVEL", "debug, info, warn, error"),
    CFG_OPT_END,
};

int main(int argc, char **argv)
{
    broker_conf_t conf, defaults;
    broker_conf_defaults(&defaults);
    conf = defaults;
    char err[1024];
    switch (config_load(&conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit-broker [options]",
                     "The snakepit broker: queues jobs per service and tenant (deficit round\n"
                     "robin), dispatches them to executor nodes by credit, leases them until\n"
                     "their result, and answers every job exactly once. See broker/README.md.",
                     s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit-broker: %s\n", err);
        return 2;
    case CONFIG_OK:
        break;
    }
    log_level_t level;
    if (log_level_parse(conf.log_level, &level) < 0) {
        fprintf(stderr, "snakepit-broker: unknown log level '%s'\n", conf.log_level);
        return 2;
    }
    log_init("broker", level);
    if (!wire_name_ok(conf.instance, strlen(conf.instance))) {
        fprintf(stderr, "snakepit-broker: --instance must be 1-64 of [A-Za-z0-9._-]\n");
        return 2;
    }
    broker_t *b = broker_new(&conf, err, sizeof err);
    if (!b) {
        char q[1100];
        log_error("event=startup_failed error=%s", log_quote(q, sizeof q, err));
        fprintf(stderr, "snakepit-broker: %s\n", err);
        return 1;
    }
    int rc = broker_run(b);
    broker_destroy(&b);
    return rc;
}
