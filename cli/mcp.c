/* cli/mcp.c — `snakepit mcp --stdio`: an MCP server on stdin/stdout for local clients
 * (Claude Desktop-style configs), backed by the farm of the state directory. When none is
 * running it starts one in the background (`snakepit up`, detached, logging to the state
 * dir) and waits for it; then it becomes snakepit-mcp --stdio. stdout carries protocol only.
 * That farm outlives the session: `snakepit down` stops it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "cli/farm/farm.h"
#include "mcp.h"

typedef struct {
    int  stdio;
    char state_dir[PATH_MAX];
    char tenant[65];
    char compat[64];
    char log_level[16];
    long start_timeout_s;
} mcp_args_t;

/* The drop-in endpoints snakepit-mcp serves (mcp-frontend/compat/compat.c), checked here so a
 * mistyped name is a usage error before any farm is started for it. */
static const char *const s_compat[] = {"python-sandbox", "py-sandbox",   "secure-sandbox",
                                       "exec-sandbox",   "code-sandbox", NULL};

static const cfg_opt_t s_opts[] = {
    CFG_OPT_BOOL(mcp_args_t, stdio, "stdio", "serve MCP on stdin/stdout"),
    CFG_OPT_STR(mcp_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(mcp_args_t, tenant, "tenant", "NAME", "tenant the stdio session runs as"),
    CFG_OPT_STR(mcp_args_t, compat, "compat", "NAME",
                "serve the drop-in endpoint NAME instead: python-sandbox, py-sandbox, "
                "secure-sandbox, exec-sandbox or code-sandbox"),
    CFG_OPT_STR(mcp_args_t, log_level, "log-level", "LEVEL", "log level (logs go to stderr)"),
    CFG_OPT_INT(mcp_args_t, start_timeout_s, "start-timeout", 1, 3600, "S", "how long to wait for a farm to start"),
    CFG_OPT_END,
};

#define UP_LOG_MAX (10L * 1024 * 1024) /* up.log is kept to about this, with one older copy */

static int s_start_farm(const char *dir, const char *bin, long timeout_s)
{
    char log[PATH_MAX + 32], old[PATH_MAX + 40];
    struct stat log_st;
    mkdir(dir, 0700);
    snprintf(log, sizeof log, "%s/up.log", dir);
    /* `snakepit up` itself logs a line per start, stop and restart of a component: little, but
     * a farm started by every stdio session for months adds up */
    snprintf(old, sizeof old, "%s.1", log);
    if (stat(log, &log_st) == 0 && log_st.st_size > UP_LOG_MAX) rename(log, old);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setsid(); /* the farm outlives this stdio session */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        if (in >= 0) dup2(in, 0);
        char exe[PATH_MAX + 16];
        snprintf(exe, sizeof exe, "%s/snakepit", bin);
        execl(exe, "snakepit", "up", "--state-dir", dir, (char *)NULL);
        _exit(127);
    }
    uint64_t give_up = clock_mono_ms() + (uint64_t)timeout_s * 1000u;
    char     err[256];
    while (clock_mono_ms() < give_up) {
        farm_info_t info;
        if (farm_read_ready(dir, &info, err, sizeof err) == 0 && farm_alive(&info)) return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "snakepit mcp: the farm failed to start; see %s\n", log);
            return -1;
        }
        usleep(100000);
    }
    fprintf(stderr, "snakepit mcp: the farm did not start in %ld s; see %s\n", timeout_s, log);
    return -1;
}

int mcp_main(int argc, char **argv)
{
    mcp_args_t a = {0}, defaults = {0};
    snprintf(defaults.tenant, sizeof defaults.tenant, "local");
    snprintf(defaults.log_level, sizeof defaults.log_level, "warn");
    defaults.start_timeout_s = 90;
    a = defaults;
    char err[512];
    switch (config_load(&a, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit mcp --stdio [--state-dir DIR] [--compat NAME]",
                     "Serve MCP over stdio, backed by the farm in DIR (started if none runs).",
                     s_opts, &defaults);
        return 0;
    case CONFIG_ERROR: fprintf(stderr, "snakepit mcp: %s\n", err); return EX_USAGE;
    case CONFIG_OK: break;
    }
    int known = !a.compat[0];
    for (const char *const *n = s_compat; *n && !known; n++) known = !strcmp(*n, a.compat);
    if (!known) {
        fprintf(stderr,
                "snakepit mcp: --compat %s: no such drop-in endpoint (python-sandbox, py-sandbox, "
                "secure-sandbox, exec-sandbox, code-sandbox)\n",
                a.compat);
        return EX_USAGE;
    }
    if (!a.stdio) {
        fprintf(stderr, "snakepit mcp: only --stdio is served here; the HTTP endpoint is part of "
                        "`snakepit up`\n");
        return EX_USAGE;
    }
    char dir[PATH_MAX], bin[PATH_MAX];
    farm_state_dir(a.state_dir, dir, sizeof dir);
    farm_bin_dir(bin, sizeof bin);
    farm_info_t info;
    if (farm_read_ready(dir, &info, err, sizeof err) < 0 || !farm_alive(&info)) {
        if (s_start_farm(dir, bin, a.start_timeout_s) < 0) return 1;
        if (farm_read_ready(dir, &info, err, sizeof err) < 0) {
            fprintf(stderr, "snakepit mcp: %s\n", err);
            return 1;
        }
    }
    char exe[PATH_MAX + 16];
    snprintf(exe, sizeof exe, "%s/snakepit-mcp", bin);
    char *args[] = {"snakepit-mcp", "--stdio", "--broker", info.brokers, "--redis", info.redis,
                    "--tenant", a.tenant, "--log-level", a.log_level,
                    a.compat[0] ? "--compat" : NULL, a.compat, NULL};
    execv(exe, args);
    fprintf(stderr, "snakepit mcp: cannot run %s: %s\n", exe, strerror(errno));
    return 127;
}
