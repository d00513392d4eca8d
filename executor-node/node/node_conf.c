/* executor-node/node/node_conf.c — see node_conf.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/profiles.h"
#include "node_conf.h"

void node_conf_defaults(node_conf_t *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->broker, sizeof c->broker, "tcp://127.0.0.1:5556");
    snprintf(c->profiles, sizeof c->profiles, "%s", profile_default()->name);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->slots = cpus > 0 ? cpus : 1;
    c->reserve_slots = 1;
    c->pool = 0; /* auto: slots + reserve + 1 */
    c->heartbeat_ms = 1000;
    c->liveness = 3;
    c->run_uid_host = 65534;
    c->run_gid_host = 65534;
    snprintf(c->python, sizeof c->python, "/usr/bin/python3.11");
    c->output_max = 8 << 20;
    c->recycle_jobs = 10000;
    c->recycle_s = 1800;
    snprintf(c->log_level, sizeof c->log_level, "info");
    snprintf(c->metrics, sizeof c->metrics, "127.0.0.1:9102");
    c->max_sessions = 256;
    c->session_pool = 1;
    c->session_idle_s = 600;
    c->session_max_idle_s = 86400;
    c->session_grace_ms = 2000;
    c->session_evict_free_mb = 256;
    c->session_memory_mb = 0;
    c->session_checkpoint_s = 30;
    snprintf(c->envs_dir, sizeof c->envs_dir, "/tmp/snakepit-envs");
    c->max_env_zygotes = 2;
    c->env_idle_s = 600;
    c->build_timeout_s = 300;
    c->egress = 1;
    c->egress_port = 3128;
    c->egress_pool = 1;
    c->egress_max_bytes = 256L << 20;
    c->egress_max_conns = 256;
    c->egress_idle_s = 60;
    c->egress_tenant_open = 64;
    c->drain_grace_s = 60; /* the deploy files' 75 s stop timeouts: this + 15 s to stop */
}
