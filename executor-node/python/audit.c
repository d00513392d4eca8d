/* executor-node/python/audit.c — see audit.h. The hook reads each event's arguments and asks
 * policy.h; what it refuses raises _snakepit.PermissionError (a PermissionError it owns) and is
 * recorded in the job area: BLOCK as audit_blocked, DENY as audit_denied (the runner then says
 * whether such a refusal is what ended the job), and each in the area's list of events, which
 * becomes the Result's security_events. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "policy.h"

static policy_t s_policy;       /* the profile, the workspace, our pid */
static char s_workspace[128];   /* the child's workspace directory; "" when none */
static char s_tenant[65];       /* the job's tenant */
static area_t *s_area;          /* where a child reports what was refused; NULL in the zygote */
static int s_armed;             /* enforcing: set in the child, once its job runs */
static PyObject *s_socket_init; /* socket.socket.__init__'s code, found in the zygote */
static PyObject *s_permission_error; /* _snakepit.PermissionError, once made */

PyObject *audit_permission_error(void)
{
    if (!s_permission_error)
        s_permission_error = PyErr_NewExceptionWithDoc("_snakepit.PermissionError",
                                                       "an operation the sandbox refuses",
                                                       PyExc_PermissionError, NULL);
    return s_permission_error;
}

void audit_set_workspace(const char *dir)
{
    snprintf(s_workspace, sizeof s_workspace, "%s", dir ? dir : "");
}

/* Argument i as a path: str (encoded as the file system encoding does, surrogateescape
 * included, so a name that is not UTF-8 is judged by its real bytes), bytes, or an
 * os.PathLike (pathlib passes Path objects; its __fspath__ runs as the job's own code would).
 * What it points into stays alive in *hold until the caller drops it. An int is a file
 * descriptor (*fd set). NULL when it is none of these: unknown, and so judged as such. */
static const char *s_arg_path(PyObject *args, Py_ssize_t i, PyObject **hold, int *fd)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return NULL;
    PyObject *a = PyTuple_GET_ITEM(args, i);
    if (PyLong_Check(a)) {
        if (fd) *fd = 1;
        return NULL;
    }
    if (!PyUnicode_Check(a) && !PyBytes_Check(a)) {
        if (!PyObject_HasAttrString((PyObject *)Py_TYPE(a), "__fspath__")) return NULL;
        PyObject *p = PyOS_FSPath(a);
        if (!p) return NULL;
        Py_XSETREF(*hold, p);
        a = p;
    }
    if (PyUnicode_Check(a)) {
        PyObject *b = PyUnicode_EncodeFSDefault(a);
        if (!b) return NULL;
        Py_XSETREF(*hold, b);
        a = b;
    }
    return PyBytes_Check(a) ? PyBytes_AS_STRING(a) : NULL;
}

static const char *s_arg_str(PyObject *args, Py_ssize_t i)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return NULL;
    PyObject *a = PyTuple_GET_ITEM(args, i);
    return PyUnicode_Check(a) ? PyUnicode_AsUTF8(a) : NULL;
}

static int s_arg_long(PyObject *args, Py_ssize_t i, long *out)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return 0;
    PyObject *a = PyTuple_GET_ITEM(args, i);
    if (!PyLong_Check(a)) return 0;
    *out = PyLong_AsLong(a);
    return !PyErr_Occurred();
}

/* ---- unpickling: the whole resolved object, not just its module ------------------------- */

/* The module an object is defined in: a module's own name, else its __module__ (its type's
 * when it has none); NULL when none can be read. A new reference to a str. */
static PyObject *s_defining_module(PyObject *obj)
{
    if (PyModule_Check(obj)) return PyObject_GetAttrString(obj, "__name__");
    PyObject *m = PyObject_GetAttrString(obj, "__module__");
    if (m && PyUnicode_Check(m)) return m;
    Py_XDECREF(m);
    PyErr_Clear();
    m = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__module__");
    if (m && PyUnicode_Check(m)) return m;
    Py_XDECREF(m);
    PyErr_Clear();
    return NULL;
}

static int s_module_ok(PyObject *modname, PyObject *obj)
{
    const char *m = modname ? PyUnicode_AsUTF8(modname) : NULL;
    if (!m) return 0;
    if (strcmp(m, "builtins") == 0) { /* a builtin re-exported by a data module */
        PyObject *n = PyObject_GetAttrString(obj, "__name__");
        const char *name = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8(n) : NULL;
        int ok = name && policy_unpickle(s_policy.profile, "builtins", name);
        Py_XDECREF(n);
        return ok;
    }
    return policy_unpickle(s_policy.profile, m, NULL);
}

/* pickle.find_class(module, name): the module must be one unpickling may name, and so must
 * every module the (dotted, protocol 4) name passes through and the one the object it reaches
 * is defined in: "numpy" + "lib.npyio.os.system" is os.system. Resolution happens here as
 * pickle would do it; a name that does not resolve is left for pickle to fail on. */
static int s_unpickle_ok(const char *module, const char *name)
{
    if (!policy_unpickle(s_policy.profile, module, name)) return 0;
    /* builtins' plain types, and byvalue.py's reconstructors by their own undotted names */
    if (!strcmp(module, "builtins") || !strcmp(module, "_snakepit_byvalue")) return 1;
    PyObject *mname = PyUnicode_FromString(module);
    PyObject *obj = mname ? PyImport_GetModule(mname) : NULL;
    Py_XDECREF(mname);
    if (!obj) { /* not loaded: pickle's import fails, imports come from memory only */
        PyErr_Clear();
        return 1;
    }
    int ok = 1;
    for (const char *c = name; ok && c && *c;) {
        size_t len = strcspn(c, ".");
        char part[128];
        if (len >= sizeof part) break;
        memcpy(part, c, len);
        part[len] = '\0';
        PyObject *next = PyObject_GetAttrString(obj, part);
        Py_DECREF(obj);
        obj = next;
        if (!obj) break;
        PyObject *m = s_defining_module(obj);
        ok = s_module_ok(m, obj);
        Py_XDECREF(m);
        c += len;
        if (*c) c++;
    }
    Py_XDECREF(obj);
    PyErr_Clear();
    return ok;
}

/* Python 2 names (protocols 0-2 write copy_reg, __builtin__…): what pickle's fix_imports maps
 * them to (_compat_pickle) is what gets resolved, so that is what is judged. *module and *name
 * are replaced when mapped, their storage kept alive in hold. */
static void s_compat_names(const char **module, const char **name, PyObject **hold)
{
    PyObject *compat_name = PyUnicode_FromString("_compat_pickle");
    PyObject *compat = compat_name ? PyImport_GetModule(compat_name) : NULL; /* pickle loaded it */
    Py_XDECREF(compat_name);
    if (!compat) {
        PyErr_Clear();
        return;
    }
    PyObject *names = PyObject_GetAttrString(compat, "NAME_MAPPING");
    PyObject *imports = PyObject_GetAttrString(compat, "IMPORT_MAPPING");
    PyObject *key = Py_BuildValue("(ss)", *module, *name);
    PyObject *hit = names && key ? PyDict_GetItemWithError(names, key) : NULL; /* borrowed */
    if (hit && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 2) {
        Py_XSETREF(*hold, Py_NewRef(hit));
        *module = PyUnicode_AsUTF8(PyTuple_GET_ITEM(hit, 0));
        *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(hit, 1));
    } else if (imports) {
        PyObject *m = PyDict_GetItemString(imports, *module); /* borrowed */
        if (m && PyUnicode_Check(m)) {
            Py_XSETREF(*hold, Py_NewRef(m));
            *module = PyUnicode_AsUTF8(m);
        }
    }
    Py_XDECREF(key);
    Py_XDECREF(names);
    Py_XDECREF(imports);
    Py_DECREF(compat);
    PyErr_Clear();
}

/* socket.__new__ is raised from socket.socket.__init__ (Lib/socket.py), whose fileno says
 * whether the object wraps a descriptor the process already holds (socketpair's, which is how
 * asyncio's loop gets its self-pipe) or asks for a new socket. 1 for the first: the frame that
 * raised the event runs that very code object and its fileno is set. */
static int s_wraps_descriptor(void)
{
    PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
    if (!frame || !s_socket_init) return 0;
    PyCodeObject *code = PyFrame_GetCode(frame);
    int ours = (PyObject *)code == s_socket_init;
    Py_DECREF(code);
    if (!ours) return 0;
    PyObject *locals = PyFrame_GetLocals(frame);
    PyObject *fileno =
        locals && PyDict_Check(locals) ? PyDict_GetItemString(locals, "fileno") : NULL;
    int wraps = fileno && fileno != Py_None;
    Py_XDECREF(locals);
    return wraps;
}

/* "host:port" of an (host, port, …) address tuple, or the str itself (an AF_UNIX path), kept
 * alive in *hold; NULL when it is neither. For the messages that name a destination. */
static const char *s_arg_dest(PyObject *args, Py_ssize_t i, PyObject **hold)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return NULL;
    PyObject *a = PyTuple_GET_ITEM(args, i), *text = NULL;
    if (PyUnicode_Check(a))
        return PyUnicode_AsUTF8(a);
    if (PyTuple_Check(a) && PyTuple_GET_SIZE(a) >= 2)
        text = PyUnicode_FromFormat("%S:%S", PyTuple_GET_ITEM(a, 0), PyTuple_GET_ITEM(a, 1));
    if (!text) return NULL;
    Py_XSETREF(*hold, text);
    return PyUnicode_AsUTF8(text);
}

/* ---- the hook ------------------------------------------------------------------------------ */

/* Where os.* events carry their dir_fd (CPython's audit events table; -1 when none was given),
 * and the runner's own "os.open" (path, flags, dir_fd), which os.open(dir_fd=) raises because
 * the interpreter's "open" event does not carry it. */
static const struct {
    const char *event;
    int at, at2; /* os.rename and os.link: src_dir_fd and dst_dir_fd; -1 none */
} s_dir_fd_args[] = {{"os.open", 2, -1},  {"os.mkdir", 2, -1}, {"os.remove", 1, -1},
                     {"os.rmdir", 1, -1}, {"os.rename", 2, 3}, {"os.chmod", 2, -1},
                     {"os.chown", 3, -1}, {"os.utime", 3, -1}, {"os.link", 2, 3},
                     {"os.symlink", 2, -1}};

/* A directory of the workspace's own filesystem: each workspace is a tmpfs of its own, so its
 * device says it (the read-only paths are the host's). */
static int s_fd_in_workspace(long fd)
{
    struct stat d, w;
    return s_policy.workspace[0] && fstat((int)fd, &d) == 0 && S_ISDIR(d.st_mode) &&
           stat(s_policy.workspace, &w) == 0 && d.st_dev == w.st_dev;
}

/* dir_fd's facts: given (either end's, for two paths), and every one given a workspace's. */
static void s_read_dir_fd(const char *event, PyObject *args, event_t *e)
{
    for (size_t i = 0; i < sizeof s_dir_fd_args / sizeof s_dir_fd_args[0]; i++) {
        if (strcmp(event, s_dir_fd_args[i].event) != 0) continue;
        long fd = -1, fd2 = -1;
        s_arg_long(args, s_dir_fd_args[i].at, &fd);
        if (s_dir_fd_args[i].at2 >= 0) s_arg_long(args, s_dir_fd_args[i].at2, &fd2);
        if (fd < 0 && fd2 < 0) return;
        e->dir_fd = 1;
        e->dir_fd_ws = (fd < 0 || s_fd_in_workspace(fd)) && (fd2 < 0 || s_fd_in_workspace(fd2));
        return;
    }
}

/* The event's arguments, read the way each kind carries them. */
static void s_read_event(const char *event, PyObject *args, event_t *e, PyObject *hold[2])
{
    if (!strcmp(event, "open")) { /* (path, mode, flags) */
        e->path = s_arg_path(args, 0, &hold[0], &e->fd);
        e->mode = s_arg_str(args, 1);
        s_arg_long(args, 2, &e->flags);
    } else if (!strcmp(event, "os.open")) { /* the runner's: (path, flags, dir_fd) */
        e->path = s_arg_path(args, 0, &hold[0], &e->fd);
        s_arg_long(args, 1, &e->flags);
        s_read_dir_fd(event, args, e);
    } else if (!strcmp(event, "pickle.find_class")) { /* (module, name) */
        e->path = s_arg_str(args, 0);
        e->mode = s_arg_str(args, 1);
        if (e->path && e->mode) s_compat_names(&e->path, &e->mode, &hold[0]);
    } else if (!strcmp(event, "sqlite3.connect")) {
        e->path = s_arg_str(args, 0);
    } else if (!strcmp(event, "subprocess.Popen") && PyTuple_Check(args) &&
               PyTuple_GET_SIZE(args) > 1) { /* (executable, args, cwd, env): the command */
        PyObject *argv = PyTuple_GET_ITEM(args, 1);
        if ((PyList_Check(argv) || PyTuple_Check(argv)) && PySequence_Size(argv) > 0) {
            PyObject *first = PySequence_GetItem(argv, 0);
            if (first) Py_XSETREF(hold[0], first);
            argv = first;
        }
        e->path = argv && PyUnicode_Check(argv) ? PyUnicode_AsUTF8(argv) : NULL;
    } else if (!strcmp(event, "socket.__new__")) { /* (socket, family, type, proto) */
        e->num_set = s_arg_long(args, 1, &e->num);
        e->fd = s_wraps_descriptor();
    } else if (!strcmp(event, "socket.connect") || !strcmp(event, "socket.sendto") ||
               !strcmp(event, "socket.bind")) { /* (socket, address[, …]) */
        e->path = s_arg_dest(args, 1, &hold[0]);
    } else if (!strcmp(event, "http.client.connect")) { /* (self, host, port) */
        if (PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 3) {
            PyObject *t = PyUnicode_FromFormat("%S:%S", PyTuple_GET_ITEM(args, 1),
                                               PyTuple_GET_ITEM(args, 2));
            if (t) Py_XSETREF(hold[0], t);
            e->path = t ? PyUnicode_AsUTF8(t) : NULL;
        }
    } else if (!strcmp(event, "urllib.Request") || !strncmp(event, "socket.gethostby", 16) ||
               !strcmp(event, "socket.getaddrinfo")) { /* (url | host, …) */
        e->path = s_arg_str(args, 0);
    } else if (!strcmp(event, "socket.getnameinfo")) { /* (sockaddr, flags) */
        e->path = s_arg_dest(args, 0, &hold[0]);
    } else if (!strcmp(event, "os.kill") || !strcmp(event, "os.killpg")) {
        e->num_set = s_arg_long(args, 0, &e->num);
    } else if (!strncmp(event, "os.", 3) || !strncmp(event, "tempfile.", 9)) {
        e->path = s_arg_path(args, 0, &hold[0], &e->fd);
        /* os.listdir() and os.scandir() with no argument list the working directory */
        if (!e->path && !e->fd && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 &&
            PyTuple_GET_ITEM(args, 0) == Py_None)
            e->path = ".";
        if (!strcmp(event, "os.rename")) { /* both ends */
            int fd2 = 0;
            e->path2 = s_arg_path(args, 1, &hold[1], &fd2);
            if (!e->path2) e->path2 = "";
        }
        s_read_dir_fd(event, args, e);
    }
    PyErr_Clear(); /* a failed conversion leaves the argument unknown, and so judged */
}

int audit_unpickle_allowed(const char *module, const char *name)
{
    PyObject *hold = NULL;
    const char *why = NULL;
    s_compat_names(&module, &name, &hold);
    event_t e = {.event = "pickle.find_class", .path = module, .mode = name};
    int ok = module && name && policy_judge(&s_policy, &e, &why) == POLICY_ALLOW &&
             s_unpickle_ok(module, name);
    Py_XDECREF(hold);
    return ok;
}

int audit_judge(const char *event, const char *path, const char *mode, long num, int has_num,
                const char **why)
{
    event_t e = {.event = event, .path = path, .mode = mode, .num = num, .num_set = has_num};
    *why = NULL;
    verdict_t v = policy_judge(&s_policy, &e, why);
    if (v == POLICY_ALLOW && !strcmp(event, "pickle.find_class") && path && mode &&
        !s_unpickle_ok(path, mode)) {
        v = POLICY_BLOCK;
        *why = "unpickling may name only the profile's data types";
    }
    return (int)v;
}

static void s_record(volatile uint32_t *count, char *slot, size_t cap, const event_t *e)
{
    if ((*count)++ == 0)
        snprintf(slot, cap, "%s%s%.100s", e->event, e->path ? " " : "", e->path ? e->path : "");
}

/* What a refused event was aimed at, in words: a path or command, the unpickled name, the
 * socket's family, the signalled pid. */
static void s_target(const event_t *e, char *out, size_t cap)
{
    static const struct {
        long family;
        const char *name;
    } families[] = {{1, "AF_UNIX"}, {2, "AF_INET"}, {10, "AF_INET6"}, {16, "AF_NETLINK"},
                    {17, "AF_PACKET"}};
    out[0] = '\0';
    if (!strcmp(e->event, "pickle.find_class") && e->path && e->mode) {
        snprintf(out, cap, "%s.%s", e->path, e->mode);
    } else if (!strcmp(e->event, "socket.__new__") && e->num_set) {
        snprintf(out, cap, "family %ld", e->num);
        for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
            if (families[i].family == e->num) snprintf(out, cap, "%s", families[i].name);
    } else if (!strncmp(e->event, "os.kill", 7) && e->num_set) {
        snprintf(out, cap, "pid %ld", e->num);
    } else if (e->path) {
        snprintf(out, cap, "%s", e->path);
    }
}

/* One more refusal in the area's list: counted on its slot when the same operation was refused
 * on the same target before, else a new slot while there is one. */
static void s_note_event(area_hdr_t *h, const event_t *e)
{
    char target[sizeof h->events[0].target];
    s_target(e, target, sizeof target);
    uint32_t n = h->n_events < AREA_EVENTS ? h->n_events : AREA_EVENTS;
    for (uint32_t i = 0; i < n; i++) {
        area_event_t *slot = &h->events[i];
        if (!strncmp(slot->operation, e->event, sizeof slot->operation - 1) &&
            !strcmp(slot->target, target)) {
            slot->count++;
            return;
        }
    }
    if (n == AREA_EVENTS) {
        h->events_dropped++;
        return;
    }
    area_event_t *slot = &h->events[n];
    snprintf(slot->operation, sizeof slot->operation, "%s", e->event);
    memcpy(slot->target, target, sizeof slot->target);
    slot->count = 1;
    h->n_events = n + 1;
}

static int s_audit_hook(const char *event, PyObject *args, void *user_data)
{
    (void)user_data;
    if (!s_armed) return 0;
    event_t e = {.event = event};
    PyObject *hold[2] = {NULL, NULL};
    const char *why = NULL;
    s_read_event(event, args, &e, hold);
    verdict_t v = policy_judge(&s_policy, &e, &why);
    if (v == POLICY_ALLOW && !strcmp(event, "pickle.find_class") && e.path && e.mode &&
        !s_unpickle_ok(e.path, e.mode)) {
        v = POLICY_BLOCK;
        why = "unpickling may name only the profile's data types";
    }
    if (v == POLICY_ALLOW) {
        Py_XDECREF(hold[0]);
        Py_XDECREF(hold[1]);
        return 0;
    }
    if (s_area) {
        area_hdr_t *h = area_hdr(s_area);
        if (v == POLICY_BLOCK)
            s_record(&h->audit_blocked, h->audit_event, sizeof h->audit_event, &e);
        else
            s_record(&h->audit_denied, h->denied_event, sizeof h->denied_event, &e);
        s_note_event(h, &e);
    }
    PyErr_Format(s_permission_error ? s_permission_error : PyExc_PermissionError,
                 "[sandbox] %s: %s%s%.200s%s", why, event, e.path ? " '" : "", e.path ? e.path : "",
                 e.path ? "'" : "");
    Py_XDECREF(hold[0]); /* e.path may point into these until here */
    Py_XDECREF(hold[1]);
    return -1;
}

/* The code object s_wraps_descriptor recognises (NULL, and every socket refused, when the
 * zygote has no socket module). */
static void s_find_socket_init(void)
{
    PyObject *name = PyUnicode_FromString("socket");
    PyObject *module = name ? PyImport_GetModule(name) : NULL;
    PyObject *cls = module ? PyObject_GetAttrString(module, "socket") : NULL;
    PyObject *init = cls ? PyObject_GetAttrString(cls, "__init__") : NULL;
    s_socket_init = init && PyFunction_Check(init) ? PyFunction_GetCode(init) : NULL;
    Py_XINCREF(s_socket_init);
    Py_XDECREF(init);
    Py_XDECREF(cls);
    Py_XDECREF(module);
    Py_XDECREF(name);
    PyErr_Clear();
}

int audit_install(const profile_t *profile)
{
    s_policy.profile = profile;
    s_policy.workspace = s_workspace;
    s_find_socket_init();
    return PySys_AddAuditHook(s_audit_hook, NULL);
}

void audit_set_job(const char *tenant, int egress)
{
    snprintf(s_tenant, sizeof s_tenant, "%s", tenant ? tenant : "");
    s_policy.tenant = s_tenant;
    s_policy.egress = egress;
}

void audit_arm(area_t *area, int on)
{
    s_policy.self = (long)getpid();
    s_area = area;
    s_armed = on;
}
