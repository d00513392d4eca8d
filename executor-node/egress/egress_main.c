/* executor-node/egress/egress_main.c — snakepit-egress: the network egress process of one
 * executor node (egress.h). The node starts it (never by hand) with its channel on fd 3 and
 * the descriptor channel on fd 4; options come from the node's command line only. Before it
 * takes any connection it gives up what it does not need (egress.c: no new privileges, no file
 * system) and it dies with the node. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "egress.h"

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(egress_conf_t, resolver, "resolver", "ADDR[:PORT]",
                "the recursive DNS resolver names are asked of (default: the first nameserver "
                "of /etc/resolv.conf)"),
    CFG_OPT_STR(egress_conf_t, deny, "deny", "LIST",
                "the farm's own endpoints, denied to every job whatever its tenant's rules say "
                "(ADDR[:PORT], CIDR[:PORT], HOST[:PORT]; 0.0.0.0:PORT is every address of this "
                "machine)"),
    CFG_OPT_INT(egress_conf_t, idle_s, "idle-s", 1, 86400, "S",
                "close a connection that moved no byte for S seconds"),
    CFG_OPT_INT(egress_conf_t, connect_s, "connect-s", 1, 600, "S",
                "the most a request's head, name and connection may take together"),
    CFG_OPT_INT(egress_conf_t, max_open, "max-open", 1, 1 << 20, "N",
                "connections open at once on this node"),
    CFG_OPT_INT(egress_conf_t, tenant_open, "tenant-open", 1, 1 << 20, "N",
                "connections one tenant may have open at once on this node"),
    CFG_OPT_INT(egress_conf_t, max_bytes, "max-bytes", 1, 1L << 40, "BYTES",
                "a job's bytes in and out together (a tenant's cap may be lower)"),
    CFG_OPT_INT(egress_conf_t, max_conns, "max-conns", 1, 1 << 20, "N",
                "a job's connections over its life (a tenant's cap may be lower)"),
    CFG_OPT_INT(egress_conf_t, run_uid, "run-uid", 0, 4294967294L, "UID",
                "started as root: the uid to run as (0: stay)"),
    CFG_OPT_INT(egress_conf_t, run_gid, "run-gid", 0, 4294967294L, "GID",
                "started as root: the gid to run as"),
    CFG_OPT_STR(egress_conf_t, node, "node", "NAME", "the node's name, for logs"),
    CFG_OPT_STR(egress_conf_t, log_level, "log-level", "LEVEL", "debug, info, warn or error"),
    CFG_OPT_END,
};

int main(int argc, char **argv)
{
    egress_conf_t conf = {.idle_s = 60, .connect_s = 15, .max_open = 4096, .tenant_open = 256,
                          .max_bytes = 1L << 30, .max_conns = 1024, .log_level = "info"};
    char err[256];
    config_rc_t rc = config_load(&conf, s_opts, argc, argv, NULL, NULL, err, sizeof err);
    if (rc == CONFIG_HELP) {
        config_usage(stdout, "snakepit-egress [options]",
                     "The network egress of one executor node: a proxy for its sandboxed jobs. "
                     "The node (snakepit-executor --egress) starts it and talks to it over fds 3 "
                     "and 4; it is not run by hand.",
                     s_opts, NULL);
        return 0;
    }
    if (rc != CONFIG_OK) {
        fprintf(stderr, "snakepit-egress: %s\n", err);
        return 2;
    }
    log_level_t level = LOG_INFO;
    log_level_parse(conf.log_level, &level);
    log_init("egress", level);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() == 1) return 1; /* the node died before we could follow it */
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    return egress_main(&conf);
}
