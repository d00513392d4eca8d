/* executor-node/python/audit.c — see audit.h. The hook reads each event's arguments and asks
 * policy.h; what it refuses raises _snakepit.PermissionError (a PermissionError it owns) and is
 * recorded in the job area: BLOCK as audit_blocked, DENY as audit_denied (the runner then says
 * whether such a refusal is what ended the job). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
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
    if (!strcmp(module, "builtins")) return 1;
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

/* The event's arguments, read the way each kind carries them. */
static void s_read_event(const char *event, PyObject *args, event_t *e, PyObject *hold[2])
{
    if (!strcmp(event, "open")) { /* (path, mode, flags) */
        e->path = s_arg_path(args, 0, &hold[0], &e->fd);
        e->mode = s_arg_str(args, 1);
        s_arg_long(args, 2, &e->flags);
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

static void s_record(volatile uint32_t *count, char *slot, size_t cap, const event_t *e)
{
    if ((*count)++ == 0)
        snprintf(slot, cap, "%s%s%.100s", e->event, e->path ? " " : "", e->path ? e->path : "");
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
