/* executor-node/zygote/zygote_main.c — snakepit-zygote: one profile's warm interpreter, started by
 * the node (never by hand) with clone(2) into fresh namespaces and execve(2). A binary of its
 * own so that a zygote maps only what it needs — CPython, libseccomp, msgpack — and none of
 * the node's ZeroMQ, TLS, HTTP and Redis libraries: every fork copies the zygote's page
 * tables, and every library relocated at load adds pages to copy and to fault. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "executor-node/buildbox/buildbox.h"
#include "zygote.h"

typedef struct {
    zygote_conf_t z;
    long          layers;
    long          drop_uid;
    char          log_level[16];
} zygote_args_t;

static const cfg_opt_t s_zygote_opts[] = {
    CFG_OPT_STR(zygote_args_t, z.profile, "zygote", "PROFILE",
                "the profile this zygote serves (a name from the profiles table)"),
    CFG_OPT_INT(zygote_args_t, layers, "layers", 0, 1 << 16, "BITS",
                "sandbox layers to apply, as a bit set (executor-node/link/layers.h)"),
    CFG_OPT_INT(zygote_args_t, z.slots, "slots", 1, 1024, "N", "jobs that may run at once"),
    CFG_OPT_INT(zygote_args_t, z.pool, "pool", 0, 64, "N", "pre-forked children kept waiting"),
    CFG_OPT_INT(zygote_args_t, z.run_uid, "run-uid", 0, 1L << 32, "UID",
                "uid jobs run as (inside the zygote's user namespace)"),
    CFG_OPT_INT(zygote_args_t, z.run_gid, "run-gid", 0, 1L << 32, "GID", "gid jobs run as"),
    CFG_OPT_INT(zygote_args_t, drop_uid, "drop-uid", 0, 1, "0|1",
                "switch to run-uid in each child"),
    CFG_OPT_INT(zygote_args_t, z.stream_cap, "stream-cap", 4096, 64L << 20, "BYTES",
                "most bytes kept per output stream"),
    CFG_OPT_INT(zygote_args_t, z.recycle_jobs, "recycle-jobs", 0, 1L << 40, "N",
                "retire after this many jobs (0: never)"),
    CFG_OPT_INT(zygote_args_t, z.recycle_s, "recycle-s", 0, 1L << 30, "S",
                "retire after this many seconds (0: never)"),
    CFG_OPT_STR(zygote_args_t, z.python, "python", "PATH",
                "the Python home of the embedded interpreter"),
    CFG_OPT_STR(zygote_args_t, z.node, "node", "NAME", "the node's name, for logs and results"),
    CFG_OPT_STR(
        zygote_args_t, z.env_site, "env-site", "DIR",
        "a dependency environment's site-packages this zygote serves (executor-node/node/envs.h)"),
    CFG_OPT_STR(zygote_args_t, z.env_modules, "env-modules", "LIST",
                "the top-level modules that environment adds, comma-separated"),
    CFG_OPT_STR(zygote_args_t, z.test_missing, "test-missing-module", "MODULE",
                "for tests only: the warm-up imports MODULE first, as if the profile needed it "
                "(a missing one fails the zygote as a library that is not installed would)"),
    CFG_OPT_INT(zygote_args_t, z.max_sessions, "max-sessions", 0, 65536, "N",
                "sessions kept at once (0: none here)"),
    CFG_OPT_INT(zygote_args_t, z.session_pool, "session-pool", 0, 64, "N",
                "children kept forked ahead for new sessions"),
    CFG_OPT_INT(zygote_args_t, z.session_idle_s, "session-idle-s", 1, 1L << 30, "S",
                "a session's idle timeout when it names none"),
    CFG_OPT_INT(zygote_args_t, z.session_max_idle_s, "session-max-idle-s", 1, 1L << 30, "S",
                "the longest idle timeout a session may ask for"),
    CFG_OPT_INT(zygote_args_t, z.session_grace_ms, "session-grace-ms", 0, 600000, "MS",
                "a cell past its deadline: KeyboardInterrupt, then SIGKILL this long after"),
    CFG_OPT_INT(zygote_args_t, z.egress_port, "egress-port", 0, 65535, "PORT",
                "serve jobs with network egress: listen on 127.0.0.1:PORT in our own network "
                "namespace and hand the socket to the node on fd 4 (0: none)"),
    CFG_OPT_INT(zygote_args_t, z.egress_pool, "egress-pool", 0, 64, "N",
                "children kept forked ahead for jobs with network egress"),
    CFG_OPT_STR(zygote_args_t, log_level, "log-level", "LEVEL", "debug, info, warn or error"),
    CFG_OPT_END,
};

int main(int argc, char **argv)
{
    /* the same binary builds dependency environments, in a jail of its own (buildbox.h) */
    if (argc > 1 && !strncmp(argv[1], "--build-env", 11)) return buildbox_main(argc, argv);
    zygote_args_t a = {0};
    char          err[256];
    /* The zygote's options come only from the node on the command line: the environment is
     * scrubbed and no config file is read. */
    config_rc_t rc = config_load(&a, s_zygote_opts, argc, argv, NULL, NULL, err, sizeof err);
    if (rc == CONFIG_HELP) {
        config_usage(stdout, "snakepit-zygote --zygote PROFILE [options]",
                     "One profile's warm interpreter. The executor node (snakepit-executor) starts "
                     "it in fresh namespaces and talks to it over fd 3; it is not run by hand. "
                     "Options come only from the command line (the environment is scrubbed).",
                     s_zygote_opts, NULL);
        return 0;
    }
    if (rc != CONFIG_OK) {
        fprintf(stderr, "snakepit-zygote: %s\n", err);
        return 2;
    }
    log_level_t level = LOG_INFO;
    log_level_parse(a.log_level, &level);
    log_init("zygote", level);
    a.z.layers = (unsigned)a.layers;
    a.z.drop_uid = (int)a.drop_uid;
    return zygote_main(&a.z);
}

