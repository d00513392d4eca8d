/* executor-node/zygote_main.c — snakepit-zygote: one profile's warm interpreter, started by
 * the node (never by hand) with clone(2) into fresh namespaces and execve(2). A binary of its
 * own so that a zygote maps only what it needs — CPython, libseccomp, msgpack — and none of
 * the node's ZeroMQ, TLS, HTTP and Redis libraries: every fork copies the zygote's page
 * tables, and every library relocated at load adds pages to copy and to fault. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "../common/config.h"
#include "../common/log.h"
#include "zygote.h"

typedef struct {
    zygote_conf_t z;
    long          layers;
    long          drop_uid;
    char          log_level[16];
} zygote_args_t;

static const cfg_opt_t s_zygote_opts[] = {
    CFG_OPT_STR(zygote_args_t, z.profile, "zygote", "PROFILE", "profile"),
    CFG_OPT_INT(zygote_args_t, layers, "layers", 0, 1 << 16, "BITS", "layers"),
    CFG_OPT_INT(zygote_args_t, z.slots, "slots", 1, 1024, "N", "slots"),
    CFG_OPT_INT(zygote_args_t, z.pool, "pool", 0, 64, "N", "pool"),
    CFG_OPT_INT(zygote_args_t, z.run_uid, "run-uid", 0, 1L << 32, "UID", "uid"),
    CFG_OPT_INT(zygote_args_t, z.run_gid, "run-gid", 0, 1L << 32, "GID", "gid"),
    CFG_OPT_INT(zygote_args_t, drop_uid, "drop-uid", 0, 1, "0|1", "drop uid"),
    CFG_OPT_INT(zygote_args_t, z.stream_cap, "stream-cap", 4096, 64L << 20, "BYTES", "stream cap"),
    CFG_OPT_INT(zygote_args_t, z.recycle_jobs, "recycle-jobs", 0, 1L << 40, "N", "recycle"),
    CFG_OPT_INT(zygote_args_t, z.recycle_s, "recycle-s", 0, 1L << 30, "S", "recycle"),
    CFG_OPT_STR(zygote_args_t, z.python, "python", "PATH", "python"),
    CFG_OPT_STR(zygote_args_t, z.node, "node", "NAME", "node name"),
    CFG_OPT_STR(zygote_args_t, z.env_site, "env-site", "DIR", "environment site-packages"),
    CFG_OPT_STR(zygote_args_t, z.env_modules, "env-modules", "LIST", "environment modules"),
    CFG_OPT_STR(zygote_args_t, log_level, "log-level", "LEVEL", "level"),
    CFG_OPT_END,
};

int main(int argc, char **argv)
{
    zygote_args_t a = {0};
    char          err[256];
    /* The zygote's options come only from the node on the command line: the environment is
     * scrubbed and no config file is read. */
    if (config_load(&a, s_zygote_opts, argc, argv, NULL, NULL, err, sizeof err) != CONFIG_OK) {
        fprintf(stderr, "snakepit-executor --zygote: %s\n", err);
        return 2;
    }
    log_level_t level = LOG_INFO;
    log_level_parse(a.log_level, &level);
    log_init("zygote", level);
    a.z.layers = (unsigned)a.layers;
    a.z.drop_uid = (int)a.drop_uid;
    return zygote_main(&a.z);
}

