/* executor-node/python/policy.c — see policy.h. Dispatch by table: one row per event (or event
 * prefix), naming the rule that judges it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"

static const char WHY_PROCESS[] = "the sandbox cannot start processes";
static const char WHY_NETWORK[] = "the sandbox has no network";
static const char WHY_NAMES[] = "names are resolved by the egress proxy, not in the sandbox: "
                                "connect by name (socket.create_connection((host, port)), or "
                                "HTTP through the HTTP_PROXY the job is given)";
static const char WHY_SERVE[] = "a job may connect out, never listen or send to an address";
static char s_why[400]; /* a message made for this job (one thread, one job per process) */
static const char WHY_ESCAPE[] = "a sandbox-escape pattern";
static const char WHY_OUTSIDE[] = "outside the job's workspace";
static const char WHY_NO_FS[] = "this profile has no filesystem";
static const char WHY_PICKLE[] = "unpickling may name only the profile's data types";
static const char WHY_LINK[] = "links and special files cannot be made in the sandbox";
static const char WHY_SIGNAL[] = "a job may signal only itself";

/* ---- paths --------------------------------------------------------------------------------- */

/* Under one of the profile's read-only directories: absolute, no ".." component, no "//". */
static int s_readable(const policy_t *p, const char *path)
{
    if (!path || path[0] != '/' || strstr(path, "/..") || strstr(path, "//")) return 0;
    /* (absolute on purpose: a relative path is the workspace's, whatever the cwd says) */
    for (int list = 0; list < 2; list++)
        for (const char *const *r = list ? (p->egress ? egress_ro_paths : NULL) : p->profile->ro_paths;
             r && *r; r++) {
            size_t n = strlen(*r);
            if (strncmp(path, *r, n) == 0 && (path[n] == '\0' || path[n] == '/')) return 1;
        }
    return 0;
}

/* path made absolute against the working directory and normalised lexically ("." and empty
 * components dropped, ".." taking one back) into out; 0 when it does not fit. Lexical is exact
 * here: no symlink can exist in a workspace (neither seccomp nor Landlock lets a job make one),
 * and a path leaving it is judged outside whatever it would resolve to. */
static int s_absolute(const char *path, char *out, size_t cap)
{
    char raw[PATH_MAX * 2];
    if (path[0] == '/') {
        if (snprintf(raw, sizeof raw, "%s", path) >= (int)sizeof raw) return 0;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(raw, sizeof raw, "%s/%s", cwd, path) >= (int)sizeof raw)
            return 0;
    }
    size_t o = 0;
    for (const char *c = raw; *c;) {
        while (*c == '/') c++;
        size_t len = strcspn(c, "/");
        if (!len || (len == 1 && c[0] == '.')) {
        } else if (len == 2 && c[0] == '.' && c[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + 1 + len + 1 > cap) return 0;
            out[o++] = '/';
            memcpy(out + o, c, len);
            o += len;
        }
        c += len;
    }
    if (!o) out[o++] = '/';
    out[o] = '\0';
    return 1;
}

static int s_in_workspace(const policy_t *p, const char *path);

/* A path relative to a descriptor (dir_fd=) is in the workspace when that descriptor is one of
 * the workspace's directories and the path never climbs ("..": from the workspace's top that
 * would leave it); judged against the working directory it would be judged as something else. */
static int s_in_workspace_at(const policy_t *p, const event_t *e, const char *path)
{
    if (!path || path[0] == '/' || !e->dir_fd) return s_in_workspace(p, path);
    if (!e->dir_fd_ws) return 0;
    for (const char *c = path; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.') return 0;
        c += n;
        while (*c == '/') c++;
    }
    return 1;
}

/* In the job's workspace, once made absolute against the working directory (a job may chdir
 * within its workspace, and ".." may lead back up inside it). */
static int s_in_workspace(const policy_t *p, const char *path)
{
    char abs[PATH_MAX];
    if (!p->workspace[0] || !path || !path[0] || !s_absolute(path, abs, sizeof abs)) return 0;
    size_t n = strlen(p->workspace);
    return strncmp(abs, p->workspace, n) == 0 && (abs[n] == '\0' || abs[n] == '/');
}

static verdict_t s_outside(const policy_t *p, const char **why)
{
    *why = p->workspace[0] ? WHY_OUTSIDE : WHY_NO_FS;
    return POLICY_DENY;
}

/* A change (write, create, remove, rename, chmod…): the workspace only. */
static verdict_t s_change(const policy_t *p, const event_t *e, const char **why)
{
    if (e->fd) return POLICY_ALLOW;
    if (!s_in_workspace_at(p, e, e->path) || (e->path2 && !s_in_workspace_at(p, e, e->path2)))
        return s_outside(p, why);
    return POLICY_ALLOW;
}

/* os.chdir: within the workspace only, by name (a descriptor could be a read-only path's). */
static verdict_t s_chdir(const policy_t *p, const event_t *e, const char **why)
{
    if (e->fd || !s_in_workspace(p, e->path)) return s_outside(p, why);
    return POLICY_ALLOW;
}

/* A look (list, walk): the workspace and the read-only paths. */
static verdict_t s_look(const policy_t *p, const event_t *e, const char **why)
{
    if (e->fd || s_in_workspace_at(p, e, e->path) || (!e->dir_fd && s_readable(p, e->path)))
        return POLICY_ALLOW;
    return s_outside(p, why);
}

static verdict_t s_open(const policy_t *p, const event_t *e, const char **why)
{
    int write = (e->flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
    if (e->mode && strpbrk(e->mode, "wax+")) write = 1;
    /* On a syntax error CPython's parser opens the code's "file" to quote the line: a name
     * that exists nowhere, harmless to let fail at the OS layers. */
    if (!write && e->path && strcmp(e->path, "<snakepit>") == 0) return POLICY_ALLOW;
    if (e->fd || s_in_workspace_at(p, e, e->path) || (!write && !e->dir_fd && s_readable(p, e->path)))
        return POLICY_ALLOW;
    return s_outside(p, why);
}

/* sqlite3.connect: in memory, or a file in the workspace (a file: URI too). */
static verdict_t s_sqlite(const policy_t *p, const event_t *e, const char **why)
{
    const char *db = e->path;
    if (!db || !strcmp(db, ":memory:") || !db[0]) return POLICY_ALLOW;
    char path[512];
    if (!strncmp(db, "file:", 5)) {
        snprintf(path, sizeof path, "%.*s", (int)strcspn(db + 5, "?#"), db + 5);
        if (!strcmp(path, ":memory:") || !path[0]) return POLICY_ALLOW;
        db = path;
    }
    event_t f = *e;
    f.path = db;
    return s_change(p, &f, why);
}

/* ---- the rest ------------------------------------------------------------------------------ */

static verdict_t s_allow(const policy_t *p, const event_t *e, const char **why)
{
    (void)p, (void)e, (void)why;
    return POLICY_ALLOW;
}

static verdict_t s_process(const policy_t *p, const event_t *e, const char **why)
{
    (void)p, (void)e;
    *why = WHY_PROCESS;
    return POLICY_BLOCK;
}

/* The network without egress: refused as before, saying where egress comes from. */
static verdict_t s_no_network(const policy_t *p, const char **why)
{
    if (p->tenant && p->tenant[0]) {
        snprintf(s_why, sizeof s_why,
                 "%s: the egress policy of tenant %s allows no destination (an operator grants "
                 "one with `snakepit tenant set %s --egress HOST[:PORT]`)",
                 WHY_NETWORK, p->tenant, p->tenant);
        *why = s_why;
    } else {
        *why = WHY_NETWORK;
    }
    return POLICY_BLOCK;
}

/* A client's network operation (HTTP, a connect, an FTP or SMTP session): with egress, the
 * egress process judges where it goes. */
static verdict_t s_network(const policy_t *p, const event_t *e, const char **why)
{
    (void)e;
    return p->egress ? POLICY_ALLOW : s_no_network(p, why);
}

/* Serving or sending to an address: never, with or without egress. */
static verdict_t s_serve(const policy_t *p, const event_t *e, const char **why)
{
    (void)e;
    if (!p->egress) return s_no_network(p, why);
    *why = WHY_SERVE;
    return POLICY_BLOCK;
}

/* socket.__new__: a socket object around a descriptor the process already holds (the ends of
 * a socketpair: asyncio's self-pipe) makes nothing new; with egress, an inet one is a client's
 * (seccomp lets only TCP be made); any other socket is the network. */
static verdict_t s_socket(const policy_t *p, const event_t *e, const char **why)
{
    if (e->fd) return POLICY_ALLOW;
    if (p->egress && e->num_set && (e->num == 2 || e->num == 10)) return POLICY_ALLOW;
    return p->egress ? s_serve(p, e, why) : s_no_network(p, why);
}

/* A name lookup: with egress, an address literal (or none) is no lookup and passes; a name is
 * refused the way ordinary code can catch, saying what works. */
static verdict_t s_lookup(const policy_t *p, const event_t *e, const char **why)
{
    if (!p->egress) return s_no_network(p, why);
    const char *h = e->path;
    if (!h || !h[0] || strspn(h, "0123456789.") == strlen(h) || strchr(h, ':')) return POLICY_ALLOW;
    *why = WHY_NAMES;
    return POLICY_DENY;
}

/* Reverse lookups and the services database: the C library would ask a name service (nscd's
 * socket first, which seccomp traps), so with egress they are refused as lookups are. */
static verdict_t s_name_service(const policy_t *p, const event_t *e, const char **why)
{
    (void)e;
    if (!p->egress) return s_no_network(p, why);
    *why = WHY_NAMES;
    return POLICY_DENY;
}

static verdict_t s_escape(const policy_t *p, const event_t *e, const char **why)
{
    (void)p, (void)e;
    *why = WHY_ESCAPE;
    return POLICY_BLOCK;
}

static verdict_t s_link(const policy_t *p, const event_t *e, const char **why)
{
    (void)p, (void)e;
    *why = WHY_LINK;
    return POLICY_BLOCK;
}

/* os.chown and friends: the job's files belong to it already; tarfile tries (as root) and
 * carries on when refused. */
static verdict_t s_deny(const policy_t *p, const event_t *e, const char **why)
{
    (void)e;
    return s_outside(p, why);
}

/* os.kill(pid, sig), os.killpg(pgid, sig): this process (or its own group, 0) only. */
static verdict_t s_signal(const policy_t *p, const event_t *e, const char **why)
{
    if (e->num_set && (e->num == 0 || e->num == p->self)) return POLICY_ALLOW;
    *why = WHY_SIGNAL;
    return POLICY_BLOCK;
}

static verdict_t s_pickle(const policy_t *p, const event_t *e, const char **why)
{
    if (policy_unpickle(p->profile, e->path, e->mode)) return POLICY_ALLOW;
    *why = WHY_PICKLE;
    return POLICY_BLOCK;
}

typedef verdict_t(rule_fn)(const policy_t *, const event_t *, const char **);

/* Exact names first, then prefixes ("os." last: what is left of os.* takes paths). An event
 * no row names is allowed: the import guard and the OS layers hold without it. Frame
 * attributes (tb_frame, gi_frame, f_globals) are no longer refused: with sys importable a
 * frame hides nothing sys.modules does not show, and traceback and inspect walk them. */
static const struct {
    const char *name;
    int prefix;
    rule_fn *rule;
} s_rules[] = {
    {"open", 0, s_open},
    {"os.open", 0, s_open}, /* the runner's, for os.open(dir_fd=): "open" does not carry it */
    {"os.listdir", 0, s_look},
    {"os.scandir", 0, s_look},
    {"os.walk", 0, s_look},
    {"os.fwalk", 0, s_look},
    {"os.chdir", 0, s_chdir},
    {"os.listxattr", 0, s_look},
    {"os.getxattr", 0, s_look},
    {"os.putenv", 0, s_allow},
    {"os.unsetenv", 0, s_allow},
    {"os.kill", 0, s_signal},
    {"os.killpg", 0, s_signal},
    {"os.chown", 0, s_deny},
    {"os.lchown", 0, s_deny},
    {"os.link", 0, s_link},
    {"os.symlink", 0, s_link},
    {"os.mknod", 0, s_link},
    {"os.mkfifo", 0, s_link},
    {"os.system", 0, s_process},
    {"os.fork", 0, s_process},
    {"os.forkpty", 0, s_process},
    {"os.startfile", 0, s_process},
    {"os.exec", 1, s_process},
    {"os.spawn", 1, s_process},
    {"os.posix_spawn", 1, s_process},
    {"os.", 1, s_change},
    {"tempfile.", 1, s_change},
    {"sqlite3.connect", 0, s_sqlite},
    {"sqlite3.connect/handle", 0, s_allow},
    {"sqlite3.", 1, s_escape}, /* enable_load_extension, load_extension */
    {"shutil.chown", 0, s_deny},
    {"shutil.", 1, s_allow}, /* what they open, list and remove is audited on its own */
    {"glob.", 1, s_allow},
    {"pathlib.", 1, s_allow},
    {"mmap.", 1, s_allow},
    {"fcntl.", 1, s_allow},
    {"subprocess.", 1, s_process},
    {"_posixsubprocess.", 1, s_process},
    {"pty.", 1, s_process},
    {"socket.gethostname", 0, s_allow},
    {"socket.__new__", 0, s_socket},
    {"socket.connect", 0, s_network},
    {"socket.getaddrinfo", 0, s_lookup},
    {"socket.gethostbyname", 0, s_lookup},
    {"socket.gethostbyname_ex", 0, s_lookup},
    {"socket.gethostbyaddr", 0, s_name_service},
    {"socket.getnameinfo", 0, s_name_service},
    {"socket.getservbyname", 0, s_name_service},
    {"socket.getservbyport", 0, s_name_service},
    {"socket.", 1, s_serve}, /* bind, sendto, sendmsg, sethostname… */
    {"urllib.Request", 0, s_network},
    {"http.client.", 1, s_network},
    {"ftplib.", 1, s_network},
    {"smtplib.", 1, s_network},
    {"poplib.", 1, s_network},
    {"imaplib.", 1, s_network},
    {"nntplib.", 1, s_network},
    {"telnetlib.", 1, s_network},
    {"webbrowser.", 1, s_process},
    {"ensurepip.", 1, s_process},
    {"pickle.find_class", 0, s_pickle},
    {"ctypes.", 1, s_escape},
    {"marshal.", 1, s_escape},
    {"gc.get_", 1, s_escape},
    {"code.__new__", 0, s_escape},
    {"setopencode", 0, s_escape},
    {"sys._current_frames", 0, s_escape},
    {"sys._current_exceptions", 0, s_escape},
    {"cpython.run_", 1, s_escape},
    {"builtins.breakpoint", 0, s_escape},
    {"signal.pthread_kill", 0, s_escape},
    {"resource.setrlimit", 0, s_escape},
    {"resource.prlimit", 0, s_escape},
    {"syslog.", 1, s_escape},
    {"winreg.", 1, s_escape},
    {"msvcrt.", 1, s_escape},
};

verdict_t policy_judge(const policy_t *p, const event_t *e, const char **why)
{
    *why = NULL;
    for (size_t i = 0; i < sizeof s_rules / sizeof s_rules[0]; i++) {
        size_t n = strlen(s_rules[i].name);
        if (s_rules[i].prefix ? strncmp(e->event, s_rules[i].name, n) == 0
                              : strcmp(e->event, s_rules[i].name) == 0)
            return s_rules[i].rule(p, e, why);
    }
    return POLICY_ALLOW;
}

int policy_unpickle(const profile_t *profile, const char *module, const char *name)
{
    /* plain types; copyreg._reconstructor names object as the base of a plain class */
    static const char *const safe_builtins[] = {
        "slice", "range", "complex", "set", "frozenset", "bytearray", "list", "dict", "tuple",
        "int",   "float", "str",     "bytes", "bool",    "object",    NULL};
    if (!module || !profile) return 0;
    /* a session's own functions and classes, by value (byvalue.py says what these construct:
     * nothing a cell could not, and code only compiled from source) */
    if (strcmp(module, "_snakepit_byvalue") == 0)
        return name && strncmp(name, "_sp_", 4) == 0 && !strchr(name, '.');
    if (strcmp(module, "builtins") == 0) {
        for (const char *const *b = safe_builtins; name && *b; b++)
            if (strcmp(name, *b) == 0) return 1;
        return 0;
    }
    size_t n = strlen(module);
    for (const char *const *m = profile->unpickle; m && *m; m++) {
        size_t k = strlen(*m);
        if (!strcmp(*m, module) || (n > k && !strncmp(*m, module, k) && module[k] == '.'))
            return 1;
    }
    return 0;
}
