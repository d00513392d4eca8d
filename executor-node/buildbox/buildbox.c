/* executor-node/buildbox.c — see buildbox.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/pep508.h"
#include "common/profiles.h"
#include "proto/job.h"
#include "buildbox.h"
#include "buildjail.h"
#include "envbuild_py.h"

#define ANSWER_MAX (64u << 10)
#define PYTHON     "/usr/bin/python3"

typedef struct {
    char profile[64];
    char source[PATH_MAX]; /* a directory, or an index URL */
    char envs[PATH_MAX];
    char key[64];
    long timeout_s;
    long uid, gid;
    int from_source;
    char log_level[16];
} box_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(box_args_t, profile, "build-env", "PROFILE", "the profile the environment extends"),
    CFG_OPT_STR(box_args_t, source, "source", "DIR|URL", "the package source"),
    CFG_OPT_STR(box_args_t, envs, "envs", "DIR", "the environments' directory"),
    CFG_OPT_STR(box_args_t, key, "key", "HEX", "the requested set's key (48 hex digits)"),
    CFG_OPT_INT(box_args_t, timeout_s, "timeout", 5, 3600, "S", "how long pip may take"),
    CFG_OPT_INT(box_args_t, uid, "uid", 1, 4294967294L, "UID", "the uid the build runs as (root only)"),
    CFG_OPT_INT(box_args_t, gid, "gid", 1, 4294967294L, "GID", "the gid the build runs as"),
    CFG_OPT_BOOL(box_args_t, from_source, "from-source", "allow building source distributions"),
    CFG_OPT_STR(box_args_t, log_level, "log-level", "LEVEL", "debug, info, warn or error"),
    CFG_OPT_END,
};

static int s_answer_error(const char *why)
{
    printf("STATUS error\nERROR %s\n", why);
    return 0;
}

static int s_is_index(const char *source)
{
    const char *colon = strstr(source, "://");
    if (!colon || colon == source) return 0;
    for (const char *c = source; c < colon; c++)
        if (!(*c >= 'a' && *c <= 'z')) return 0;
    return 1;
}

/* ---- the tree the build leaves -------------------------------------------------------------- */

static int s_as_root;

/* Root's and read-only; no setuid bit; no special file (a FIFO would hang a job that opens
 * it). Symlinks stay as they are: the sandbox resolves them inside its own root. */
static int s_seal_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_SL || type == FTW_SLN) return s_as_root ? lchown(path, 0, 0) : 0;
    if (type == FTW_DNR || type == FTW_NS) return -1;
    if (type == FTW_F && !S_ISREG(st->st_mode)) return unlink(path);
    if (s_as_root && lchown(path, 0, 0) < 0) return -1;
    mode_t mode = type == FTW_F && !(st->st_mode & 0111) ? 0444 : 0555;
    return chmod(path, mode);
}

static int s_open_dir(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_D) chmod(path, 0700);
    return 0;
}

static int s_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void s_remove_tree(const char *path)
{
    nftw(path, s_open_dir, 32, FTW_PHYS);
    nftw(path, s_remove_entry, 32, FTW_PHYS | FTW_DEPTH);
}

/* Builds a killed build (the node's timeout) left behind, well after any could still run. */
static void s_sweep(const char *base, long timeout_s)
{
    DIR *d = opendir(base);
    if (!d) return;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char path[PATH_MAX + 300];
        struct stat st;
        if (strncmp(e->d_name, "build-", 6) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && now - st.st_mtime > 2 * timeout_s + 60)
            s_remove_tree(path);
    }
    closedir(d);
}

/* ---- the build's answer --------------------------------------------------------------------- */

typedef struct {
    char status[16], digest[64], site[128], modules[4096], dists[4096], error[2048];
} answer_t;

static void s_parse(const char *text, answer_t *a)
{
    static const struct {
        const char *tag;
        size_t off, cap;
    } rows[] = {
        {"STATUS ", offsetof(answer_t, status), sizeof a->status},
        {"DIGEST ", offsetof(answer_t, digest), sizeof a->digest},
        {"SITE ", offsetof(answer_t, site), sizeof a->site},
        {"MODULES ", offsetof(answer_t, modules), sizeof a->modules},
        {"DISTS ", offsetof(answer_t, dists), sizeof a->dists},
        {"ERROR ", offsetof(answer_t, error), sizeof a->error},
    };
    memset(a, 0, sizeof *a);
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            size_t t = strlen(rows[r].tag);
            if (n >= t && !strncmp(line, rows[r].tag, t))
                snprintf((char *)a + rows[r].off, rows[r].cap, "%.*s", (int)(n - t), line + t);
        }
        line += n;
        if (*line) line++;
    }
}

static int s_only(const char *s, const char *set, size_t min)
{
    return strlen(s) >= min && strspn(s, set) == strlen(s);
}

/* What the jail said about a built environment, before the host acts on it. */
static int s_plausible(const answer_t *a)
{
    int minor;
    char tail[32];
    return s_only(a->digest, "0123456789abcdef", 24) && strlen(a->digest) == 24 &&
           sscanf(a->site, "lib/python3.%d/%31s", &minor, tail) == 2 && !strcmp(tail, "site-packages") &&
           s_only(a->modules, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_,", 0) &&
           s_only(a->dists, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-=+!,", 0);
}

/* The environment into ENVS/<profile>/<digest>, sealed; the answer file; the answer. */
static int s_install(const box_args_t *a, const char *base, const char *work, const answer_t *ans)
{
    char from[PATH_MAX + 16], to[PATH_MAX + 80], site[PATH_MAX + 256];
    snprintf(from, sizeof from, "%s/b/env", work);
    snprintf(to, sizeof to, "%s/%s", base, ans->digest);
    if (rename(from, to) == 0) {
        if (nftw(to, s_seal_entry, 32, FTW_PHYS | FTW_DEPTH) != 0) {
            log_error("event=env_seal_failed dir=%s error=\"%s\"", to, strerror(errno));
            s_remove_tree(to);
            return s_answer_error("the built environment could not be made read-only (the executor's log has why)");
        }
    } else if (errno != EEXIST && errno != ENOTEMPTY) { /* else: the same set, built meanwhile */
        log_error("event=env_install_failed dir=%s error=\"%s\"", to, strerror(errno));
        return s_answer_error("the built environment could not be kept (the executor's log has why)");
    }
    snprintf(site, sizeof site, "%s/%s", to, ans->site);
    char text[PATH_MAX + 8600];
    snprintf(text, sizeof text, "STATUS ok\nSITE %s\nMODULES %s\nDISTS %s\n", site, ans->modules, ans->dists);
    if (a->key[0]) { /* the requested set's answer, for the next call and the next node start */
        char path[PATH_MAX + 160], tmp[PATH_MAX + 170];
        snprintf(path, sizeof path, "%s/requests/%s", base, a->key);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) < 0)
            log_warn("event=env_answer_unsaved path=%s error=\"%s\"", path, strerror(errno));
    }
    fputs(text, stdout);
    return 0;
}

/* ---- the run -------------------------------------------------------------------------------- */

/* The profile's top-level modules: an environment may not bring its own copy of one (the
 * zygote's would win in every job). */
static void s_preloaded(const profile_t *p, buf_t *out)
{
    const char *const *lists[] = {p->modules, p->preload};
    for (size_t l = 0; l < 2; l++)
        for (const char *const *m = lists[l]; m && *m; m++)
            buf_printf(out, "%s%.*s", out->len ? "," : "", (int)strcspn(*m, "."), *m);
    buf_append(out, "", 1);
}

/* The jail's child: envbuild.py, its output on out_fd. Does not return. */
static void s_child(const box_args_t *a, const profile_t *p, const char *work, char **reqs, int n,
                    int out_fd)
{
    if (dup2(out_fd, 1) < 0) _exit(127);
    syscall(SYS_close_range, 3, ~0U, 0);
    char root[PATH_MAX + 8], build[PATH_MAX + 8], timeout[24];
    snprintf(root, sizeof root, "%s/root", work);
    snprintf(build, sizeof build, "%s/b", work);
    snprintf(timeout, sizeof timeout, "%ld", a->timeout_s);
    int index = s_is_index(a->source);
    buildjail_t jail = {root, build, index ? NULL : a->source, (uid_t)a->uid, (gid_t)a->gid,
                        a->timeout_s + 5};
    buf_t pre;
    buf_init(&pre);
    s_preloaded(p, &pre);
    const char **argv = xcalloc((size_t)n + 24, sizeof *argv);
    size_t k = 0;
    const char *fixed[] = {PYTHON, "-I", "-c", envbuild_py, "--source", index ? a->source : "/source",
                           "--profile", p->name, "--system-site", p->site_paths ? "1" : "0",
                           "--from-source", a->from_source ? "1" : "0", "--timeout", timeout,
                           "--preloaded", (const char *)pre.data, "--"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[k++] = fixed[i];
    for (int i = 0; i < n; i++) argv[k++] = reqs[i];
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/build/home", "TMPDIR=/build/tmp", NULL};
    char err[512];
    buildjail_exec(&jail, (char *const *)argv, envp, err, sizeof err);
    log_error("event=env_jail_failed error=\"%s\"", err);
    _exit(127);
}

/* Runs the jail and collects what it prints (bounded). */
static int s_run(const box_args_t *a, const profile_t *p, const char *work, char **reqs, int n,
                 buf_t *out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return close(fds[0]), close(fds[1]), -1;
    if (pid == 0) s_child(a, p, work, reqs, n, fds[1]);
    close(fds[1]);
    char chunk[4096];
    for (ssize_t got; (got = read(fds[0], chunk, sizeof chunk)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        if (out->len + (size_t)got <= ANSWER_MAX) buf_append(out, chunk, (size_t)got);
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    buf_append(out, "", 1);
    return 0;
}

/* ENVS/<profile> and its requests/, and this build's directory in it: b/ (the jail's /build,
 * the run uid's) and root/ (where the jail's root is mounted). */
static int s_dirs(const box_args_t *a, char *base, size_t cap, char *work)
{
    char req[PATH_MAX + 80], sub[PATH_MAX + 16];
    if (snprintf(base, cap, "%s/%s", a->envs, a->profile) >= (int)cap ||
        snprintf(work, PATH_MAX, "%s/build-XXXXXX", base) >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(req, sizeof req, "%s/requests", base);
    if ((mkdir(a->envs, 0755) < 0 && errno != EEXIST) || (mkdir(base, 0755) < 0 && errno != EEXIST) ||
        (mkdir(req, 0755) < 0 && errno != EEXIST))
        return -1;
    s_sweep(base, a->timeout_s);
    if (!mkdtemp(work)) return -1;
    snprintf(sub, sizeof sub, "%s/root", work);
    if (mkdir(sub, 0700) < 0) return -1;
    snprintf(sub, sizeof sub, "%s/b", work);
    if (mkdir(sub, 0700) < 0) return -1;
    return s_as_root && chown(sub, (uid_t)a->uid, (gid_t)a->gid) < 0 ? -1 : 0;
}

int buildbox_main(int argc, char **argv)
{
    box_args_t a = {.timeout_s = 300, .uid = 65534, .gid = 65534};
    char *reqs[JOB_MAX_DEPS + 1], err[320], base[PATH_MAX], work[PATH_MAX];
    int n = JOB_MAX_DEPS + 1;
    if (config_load(&a, s_opts, argc, argv, reqs, &n, err, sizeof err) != CONFIG_OK) {
        fprintf(stderr, "snakepit-zygote --build-env: %s\n", err);
        return 2;
    }
    log_level_t level = LOG_INFO;
    log_level_parse(a.log_level, &level);
    log_init("buildbox", level);
    s_as_root = geteuid() == 0;
    const profile_t *p = profile_find(a.profile);
    if (!p || !a.envs[0] || !a.source[0] || n < 1 || n > JOB_MAX_DEPS || !s_only(a.key, "0123456789abcdef", 0))
        return s_answer_error("the dependency build was started without what it needs");
    for (int i = 0; i < n; i++)
        if (pep508_check(reqs[i], strlen(reqs[i]), err, sizeof err) < 0) return s_answer_error(err);
    if (s_dirs(&a, base, sizeof base, work) < 0) {
        log_error("event=env_dirs_failed envs=%s error=\"%s\"", a.envs, strerror(errno));
        return s_answer_error("the executor cannot make a directory for the build (its log has why)");
    }
    buf_t out;
    buf_init(&out);
    answer_t ans = {0};
    if (s_run(&a, p, work, reqs, n, &out) < 0) {
        log_error("event=env_build_failed error=\"%s\"", strerror(errno));
        s_answer_error("the dependency build could not be started (the executor's log has why)");
    } else if (s_parse((const char *)out.data, &ans), !strcmp(ans.status, "ok") && s_plausible(&ans)) {
        s_install(&a, base, work, &ans);
    } else if (!strcmp(ans.status, "base")) {
        printf("STATUS base\n");
    } else if (!strcmp(ans.status, "error") && ans.error[0]) {
        s_answer_error(ans.error);
    } else {
        s_answer_error("the dependency build stopped without an answer (the executor's log has why)");
    }
    buf_free(&out);
    s_remove_tree(work);
    fflush(stdout);
    return 0;
}
