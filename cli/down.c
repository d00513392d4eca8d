/* cli/down.c — see down.h.
 *
 * `snakepit up` holds STATE_DIR/up.lock (flock) for as long as it runs, with its pid written in
 * it. SIGTERM makes it stop its components in order (front-end first, Redis last, each given
 * 5 s) and exit, which frees the lock: that is what is waited for. Should it not exit within
 * --timeout, it is SIGKILLed, and so is the process group of each component it recorded in
 * STATE_DIR/up.pids that is still one of its components (its own group leader, running one of
 * the farm's programs). A pid is signalled only after its /proc entry says it is what the
 * files say it is: a stale pid may belong to anything by now. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "down.h"
#include "cli/farm/farm.h"

typedef struct {
    char state_dir[PATH_MAX];
    long timeout_s;
} down_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(down_args_t, state_dir, "state-dir", "DIR",
                "the farm's state directory (default ~/.local/state/snakepit)"),
    CFG_OPT_INT(down_args_t, timeout_s, "timeout", 1, 3600, "S",
                "how long the farm may take to stop before it is killed"),
    CFG_OPT_END,
};

/* argv of a process, NUL-separated, into buf; its length, or -1 when it is gone. */
static ssize_t s_cmdline(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n >= 0) buf[n] = '\0';
    return n;
}

/* 1 when pid runs `snakepit up` (argv[0] named snakepit, argv[1] "up"). */
static int s_is_up(pid_t pid)
{
    char cmd[512];
    ssize_t n = s_cmdline(pid, cmd, sizeof cmd);
    if (n <= 0) return 0;
    const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
    size_t first = strlen(cmd) + 1;
    return !strcmp(base, "snakepit") && first < (size_t)n && !strcmp(cmd + first, "up");
}

/* 1 when pid leads its own process group and runs one of the farm's programs (redis-server or
 * a snakepit-* binary): what `snakepit up` starts. */
static int s_is_component(pid_t pid)
{
    char cmd[512];
    if (s_cmdline(pid, cmd, sizeof cmd) <= 0 || getpgid(pid) != pid) return 0;
    const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
    return !strncmp(base, "snakepit-", 9) || !strncmp(base, "redis-server", 12);
}

/* The lock of the farm in dir: the descriptor, and in *pid the pid of the `snakepit up` that
 * holds it (0 when none does, -1 when it is held by a pid that cannot be read). -1 when there
 * is no lock file (never a farm there). */
static int s_lock(const char *dir, pid_t *pid)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, FARM_LOCK_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *pid = 0;
    if (fd < 0) return -1;
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* nobody holds it */
        flock(fd, LOCK_UN);
        return fd;
    }
    /* held: its pid is written just after the lock is taken, so a moment may pass; ready.json
     * has it too once the farm is up */
    for (int tries = 0; tries < 20 && *pid <= 0; tries++) {
        char text[32] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        if (n > 0) text[n] = '\0';
        *pid = (pid_t)atol(text);
        farm_info_t info;
        char err[PATH_MAX + 128];
        if (*pid <= 0 && farm_read_ready(dir, &info, err, sizeof err) == 0) *pid = (pid_t)info.pid;
        if (*pid <= 0) usleep(100000);
    }
    if (*pid <= 0) *pid = -1;
    return fd;
}

/* Waits up to ms for the lock to be free (the farm's `snakepit up` has exited). */
static int s_wait_free(int lock, long ms)
{
    uint64_t until = clock_mono_ms() + (uint64_t)ms;
    do {
        if (flock(lock, LOCK_SH | LOCK_NB) == 0) {
            flock(lock, LOCK_UN);
            return 1;
        }
        usleep(100000);
    } while (clock_mono_ms() < until);
    return 0;
}

/* SIGKILL to the process group of each component in up.pids that still is one. */
static void s_kill_components(const char *dir)
{
    char path[PATH_MAX + 32], name[64];
    int pid;
    snprintf(path, sizeof path, "%s/%s", dir, FARM_PIDS_FILE);
    FILE *f = fopen(path, "r");
    if (!f) return;
    while (fscanf(f, "%63s %d", name, &pid) == 2)
        if (pid > 1 && s_is_component(pid)) {
            fprintf(stderr, "snakepit down: killing %s (process group %d)\n", name, pid);
            kill(-pid, SIGKILL);
        }
    fclose(f);
}

static int s_stop(const char *dir, int lock, pid_t pid, long timeout_s)
{
    if (!s_is_up(pid)) {
        fprintf(stderr,
                "snakepit down: %s/%s is held by pid %d, which is not `snakepit up`: not "
                "signalling it\n",
                dir, FARM_LOCK_FILE, (int)pid);
        return 1;
    }
    fprintf(stderr, "snakepit down: stopping the farm in %s (pid %d)\n", dir, (int)pid);
    if (kill(pid, SIGTERM) < 0 && errno != ESRCH) {
        fprintf(stderr, "snakepit down: kill %d: %s\n", (int)pid, strerror(errno));
        return 1;
    }
    if (s_wait_free(lock, timeout_s * 1000)) return 0;
    fprintf(stderr, "snakepit down: the farm did not stop in %ld s: killing it\n", timeout_s);
    if (s_is_up(pid)) kill(pid, SIGKILL);
    s_kill_components(dir);
    if (s_wait_free(lock, 5000)) return 0;
    fprintf(stderr, "snakepit down: pid %d still holds %s/%s\n", (int)pid, dir, FARM_LOCK_FILE);
    return 1;
}

int down_main(int argc, char **argv)
{
    down_args_t a = {.timeout_s = 60}, defaults = a;
    char err[512], *rest[1];
    int n_rest = 1;
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit down [--state-dir DIR] [--timeout S]",
                     "Stop the farm that `snakepit up` runs from the state directory (also one\n"
                     "`snakepit mcp --stdio` started in the background): its components stop in\n"
                     "order, front-end first and Redis last, so the last records land. Exits 0\n"
                     "when the farm has stopped or none was running, 1 when it could not stop it.",
                     s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit down: %s\n", err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    if (n_rest) {
        fprintf(stderr, "snakepit down: unexpected argument '%s' (see --help)\n", rest[0]);
        return EX_USAGE;
    }
    char dir[PATH_MAX];
    farm_state_dir(a.state_dir, dir, sizeof dir);
    pid_t pid;
    int lock = s_lock(dir, &pid);
    if (lock < 0 || pid == 0) {
        fprintf(stderr, "snakepit down: no farm is running from %s\n", dir);
        if (lock >= 0) close(lock);
        return 0;
    }
    if (pid < 0) {
        fprintf(stderr, "snakepit down: %s/%s is held, but names no pid\n", dir, FARM_LOCK_FILE);
        close(lock);
        return 1;
    }
    int rc = s_stop(dir, lock, pid, a.timeout_s);
    close(lock);
    if (rc == 0) fprintf(stderr, "snakepit down: stopped\n");
    return rc;
}
