/* executor-node/audit.c — see audit.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <string.h>

#include "audit.h"

static const profile_t *s_profile; /* for the read-only paths the hook lets through */
static area_t *s_area;             /* where a child reports what was blocked; NULL in the zygote */
static int s_armed;                /* enforcing: set in the child, once its job runs */
static char s_workspace[128];      /* the child's workspace directory; "" when none */

/* Event prefixes that user code never needs and that escape chains end in. */
static const char *const s_blocked_prefixes[] = {
    "os.",
    "subprocess.",
    "socket.",
    "ctypes.",
    "shutil.",
    "pty.",
    "fcntl.",
    "mmap.",
    "resource.",
    "syslog.",
    "sqlite3.",
    "tempfile.",
    "glob.",
    "pathlib.",
    "webbrowser.",
    "urllib.Request",
    "http.client.",
    "ftplib.",
    "smtplib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "telnetlib.",
    "winreg.",
    "msvcrt.",
    "marshal.",
    "gc.get_",
    "code.__new__",
    "setopencode",
    "sys._current_frames",
    "sys._current_exceptions",
    "pdb.",
    "builtins.breakpoint",
    "signal.pthread_kill",
    "cpython.run_",
    "ensurepip.",
    NULL,
};
/* Not "import": the import guard already enforces the allowlist for the code's own imports,
 * and loading a module that is not preloaded needs files the other layers refuse; blocking
 * the event would turn a library's `try: import optional ... except ImportError` into a
 * violation. */

/* Reading these attributes is how frame and generator escapes reach the runner's globals. */
static const char *const s_frame_attrs[] = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", NULL};

/* A path the job may read: under one of the profile's read-only directories, absolute, with
 * no ".." component (Landlock and the mount namespace would stop a traversal anyway; the hook
 * should not be the layer that is fooled). */
static int s_readable_path(const char *path)
{
    if (!path || path[0] != '/' || strstr(path, "/..") || strstr(path, "//")) return 0;
    for (const char *const *p = s_profile ? s_profile->ro_paths : NULL; p && *p; p++) {
        size_t n = strlen(*p);
        if (strncmp(path, *p, n) == 0 && (path[n] == '\0' || path[n] == '/')) return 1;
    }
    return 0;
}

/* A path inside the job's workspace: relative (the child's working directory is the
 * workspace) or absolute under it, never with a ".." component or an empty one. Symlinks
 * cannot exist there (neither seccomp nor Landlock lets the job make one). */
static int s_workspace_path(const char *path)
{
    if (!s_workspace[0] || !path || !path[0] || strstr(path, "//")) return 0;
    size_t n = strlen(s_workspace);
    if (path[0] == '/') {
        if (strncmp(path, s_workspace, n) != 0 || (path[n] != '\0' && path[n] != '/')) return 0;
        path += n;
    }
    for (const char *p = path; *p;) { /* no ".." component */
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.') return 0;
        p += len;
        if (*p) p++;
    }
    return 1;
}

void audit_set_workspace(const char *dir)
{
    snprintf(s_workspace, sizeof s_workspace, "%s", dir ? dir : "");
}

/* os.* events a workspace job may cause on its own files (pathlib and the libraries' own
 * mkdir/remove/rename); every other os.* event stays blocked. */
static const char *const s_workspace_os_events[] = {
    "os.listdir", "os.scandir", "os.mkdir",    "os.rmdir",
    "os.remove",  "os.rename",  "os.truncate", NULL,
};

/* Unpickling (np.load(allow_pickle=True), pandas.read_pickle) calls whatever callable the
 * data names: only the profile's own modules may be named, and of builtins only plain types
 * (pandas pickles name slice), never eval, exec, getattr or __import__. */
static int s_pickle_blocked(const char *module, const char *name)
{
    static const char *const safe_builtins[] = {
        "slice", "range", "complex", "set", "frozenset", "bytearray", "list", "dict",
        "tuple", "int",   "float",   "str", "bytes",     "bool",      NULL};
    if (!module || !name || !s_profile) return 1;
    if (strcmp(module, "builtins") == 0) {
        for (const char *const *b = safe_builtins; *b; b++)
            if (strcmp(name, *b) == 0) return 0;
        return 1;
    }
    return !profile_allows(s_profile, module);
}

int audit_event_blocked(const char *event, const char *arg1, const char *mode, long flags)
{
    if (strcmp(event, "open") == 0) {
        int write = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
        if (mode && strpbrk(mode, "wax+")) write = 1;
        /* On a syntax error CPython's parser opens the code's "file" to quote the line: a
         * name that exists nowhere, harmless to let fail at the OS layers. */
        if (!write && arg1 && strcmp(arg1, "<snakepit>") == 0) return 0;
        if (s_workspace_path(arg1)) return 0;
        return write || !s_readable_path(arg1);
    }
    if (strcmp(event, "os.listdir") == 0 || strcmp(event, "os.scandir") == 0 ||
        strcmp(event, "os.walk") == 0)
        if (s_readable_path(arg1)) return 0;
    for (const char *const *e = s_workspace_os_events; s_workspace[0] && *e; e++)
        if (strcmp(event, *e) == 0) return !s_workspace_path(arg1);
    if (strcmp(event, "pickle.find_class") == 0) return s_pickle_blocked(arg1, mode);
    if (strcmp(event, "object.__getattr__") == 0) {
        for (const char *const *a = s_frame_attrs; *a; a++)
            if (arg1 && strcmp(arg1, *a) == 0) return 1;
        return 0;
    }
    for (const char *const *p = s_blocked_prefixes; *p; p++) {
        size_t n = strlen(*p);
        if (strncmp(event, *p, n) == 0) return 1;
    }
    return 0;
}

/* Argument i as text: str, bytes, or a path object (pathlib passes Path objects), whose
 * os.fspath() result is kept alive in *hold until the caller drops it. Only a real
 * os.PathLike's __fspath__ is called, and it runs as the job's own code would. */
static const char *s_arg_str(PyObject *args, Py_ssize_t i, PyObject **hold)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return NULL;
    PyObject *a = PyTuple_GET_ITEM(args, i);
    if (!PyUnicode_Check(a) && !PyBytes_Check(a) && hold && !*hold && s_workspace[0] &&
        PyObject_HasAttrString((PyObject *)Py_TYPE(a), "__fspath__")) {
        *hold = PyOS_FSPath(a);
        a = *hold;
        if (!a) return NULL;
    }
    if (PyUnicode_Check(a)) return PyUnicode_AsUTF8(a);
    if (PyBytes_Check(a)) return PyBytes_AS_STRING(a);
    return NULL;
}

static int s_audit_hook(const char *event, PyObject *args, void *user_data)
{
    (void)user_data;
    if (!s_armed) return 0;
    const char *arg1 = NULL, *mode = NULL;
    long flags = 0;
    PyObject *hold[2] = {NULL, NULL};
    int blocked;
    if (strcmp(event, "object.__getattr__") == 0) {
        arg1 = s_arg_str(args, 1, NULL);
    } else if (strcmp(event, "open") == 0) { /* (path, mode, flags) */
        arg1 = s_arg_str(args, 0, &hold[0]);
        mode = s_arg_str(args, 1, NULL);
        if (PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 2 &&
            PyLong_Check(PyTuple_GET_ITEM(args, 2)))
            flags = PyLong_AsLong(PyTuple_GET_ITEM(args, 2));
    } else if (strcmp(event, "pickle.find_class") == 0) { /* (module, name) */
        arg1 = s_arg_str(args, 0, NULL);
        mode = s_arg_str(args, 1, NULL);
    } else if (strncmp(event, "os.", 3) == 0) {
        arg1 = s_arg_str(args, 0, &hold[0]);
        /* os.listdir() with no argument lists the working directory */
        if (!arg1 && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 &&
            PyTuple_GET_ITEM(args, 0) == Py_None && strcmp(event, "os.listdir") == 0)
            arg1 = ".";
    }
    PyErr_Clear(); /* a failed conversion leaves the argument unknown, and so blocked */
    blocked = audit_event_blocked(event, arg1, mode, flags);
    if (!blocked && strcmp(event, "os.rename") == 0) { /* both ends must be in the workspace */
        const char *dst = s_arg_str(args, 1, &hold[1]);
        PyErr_Clear();
        if (audit_event_blocked(event, dst, NULL, 0)) blocked = 1, arg1 = dst;
    }
    if (!blocked) {
        Py_XDECREF(hold[0]);
        Py_XDECREF(hold[1]);
        return 0;
    }
    if (!s_area) { /* the zygote's pretouch probe has no job area to report into */
        PyErr_Format(PyExc_PermissionError, "snakepit: '%s' is not permitted", event);
    } else {
        area_hdr_t *h = area_hdr(s_area);
        if (h->audit_blocked++ == 0)
            snprintf(h->audit_event, sizeof h->audit_event, "%s%s%.100s", event, arg1 ? " " : "",
                     arg1 ? arg1 : "");
        PyErr_Format(PyExc_PermissionError,
                     "snakepit: '%s' is not permitted in the sandbox%s%.200s", event,
                     arg1 ? ": " : "", arg1 ? arg1 : "");
    }
    Py_XDECREF(hold[0]); /* arg1 may point into these until here */
    Py_XDECREF(hold[1]);
    return -1;
}

int audit_install(const profile_t *profile)
{
    s_profile = profile;
    return PySys_AddAuditHook(s_audit_hook, NULL);
}

void audit_arm(area_t *area, int on)
{
    s_area = area;
    s_armed = on;
}
