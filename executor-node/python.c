/* executor-node/python.c — see python.h. Holds the _snakepit builtin module (output into
 * shared memory, the runner's result, traceback frames read in C so the runner never touches
 * tb_frame from Python) and the audit hook (PEP 578), which cannot be removed once added. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <frameobject.h>
#include <malloc.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../proto/mpack.h"
#include "python.h"
#include "runner_py.h"

static area_t   *s_area;        /* the child's job area; NULL in the zygote */
static int       s_armed;       /* the audit hook enforces once set, in the child only */
static PyObject *s_run_fn;      /* runner.run */
static PyObject *s_validate_fn; /* runner.validate */
static char      s_version[32];
static char     *s_versions;    /* JSON {package: version}, from runner.versions() */
static char      s_workspace[128]; /* the child's workspace directory; "" when none */

/* ---- audit policy ------------------------------------------------------------------- */

/* Event prefixes that user code never needs and that escape chains end in. */
static const char *const s_blocked_prefixes[] = {
    "os.", "subprocess.", "socket.", "ctypes.", "shutil.", "pty.", "fcntl.", "mmap.",
    "resource.", "syslog.", "sqlite3.", "tempfile.", "glob.", "pathlib.", "webbrowser.",
    "urllib.Request", "http.client.", "ftplib.", "smtplib.", "poplib.", "imaplib.", "nntplib.",
    "telnetlib.", "winreg.", "msvcrt.", "marshal.", "gc.get_", "code.__new__", "setopencode",
    "sys._current_frames", "sys._current_exceptions", "pdb.", "builtins.breakpoint",
    "signal.pthread_kill", "cpython.run_", "ensurepip.", NULL,
};
/* Not "import": the import guard already enforces the allowlist for the code's own imports,
 * and loading a module that is not preloaded needs files the other layers refuse; blocking
 * the event would turn a library's `try: import optional ... except ImportError` into a
 * violation. */

/* Reading these attributes is how frame and generator escapes reach the runner's globals. */
static const char *const s_frame_attrs[] = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", NULL};

static const profile_t *s_profile; /* for the read-only paths the hook lets through */

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

void py_set_workspace(const char *dir)
{
    snprintf(s_workspace, sizeof s_workspace, "%s", dir ? dir : "");
}

/* os.* events a workspace job may cause on its own files (pathlib and the libraries' own
 * mkdir/remove/rename); every other os.* event stays blocked. */
static const char *const s_workspace_os_events[] = {
    "os.listdir", "os.scandir", "os.mkdir", "os.rmdir", "os.remove", "os.rename", "os.truncate",
    NULL,
};

/* Unpickling (np.load(allow_pickle=True), pandas.read_pickle) calls whatever callable the
 * data names: only the profile's own modules may be named, and of builtins only plain types
 * (pandas pickles name slice), never eval, exec, getattr or __import__. */
static int s_pickle_blocked(const char *module, const char *name)
{
    static const char *const safe_builtins[] = {"slice", "range", "complex", "set", "frozenset",
                                                "bytearray", "list", "dict", "tuple", "int",
                                                "float", "str", "bytes", "bool", NULL};
    if (!module || !name || !s_profile) return 1;
    if (strcmp(module, "builtins") == 0) {
        for (const char *const *b = safe_builtins; *b; b++)
            if (strcmp(name, *b) == 0) return 0;
        return 1;
    }
    return !profile_allows(s_profile, module);
}

int py_event_blocked(const char *event, const char *arg1, const char *mode, long flags)
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
    long        flags = 0;
    PyObject   *hold[2] = {NULL, NULL};
    int         blocked;
    if (strcmp(event, "object.__getattr__") == 0) {
        arg1 = s_arg_str(args, 1, NULL);
    } else if (strcmp(event, "open") == 0) { /* (path, mode, flags) */
        arg1 = s_arg_str(args, 0, &hold[0]);
        mode = s_arg_str(args, 1, NULL);
        if (PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 2 && PyLong_Check(PyTuple_GET_ITEM(args, 2)))
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
    blocked = py_event_blocked(event, arg1, mode, flags);
    if (!blocked && strcmp(event, "os.rename") == 0) { /* both ends must be in the workspace */
        const char *dst = s_arg_str(args, 1, &hold[1]);
        PyErr_Clear();
        if (py_event_blocked(event, dst, NULL, 0)) blocked = 1, arg1 = dst;
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
        PyErr_Format(PyExc_PermissionError, "snakepit: '%s' is not permitted in the sandbox%s%.200s",
                     event, arg1 ? ": " : "", arg1 ? arg1 : "");
    }
    Py_XDECREF(hold[0]); /* arg1 may point into these until here */
    Py_XDECREF(hold[1]);
    return -1;
}

/* ---- _snakepit module ------------------------------------------------------------------ */

static uint64_t s_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Past the output cap the job ends at once: an output flood should not burn CPU until its
 * time limit, and ending here cannot be caught by the user's code as an exception could. */
static void s_output_limit(void)
{
    area_hdr(s_area)->limit_hit = LIMIT_OUTPUT;
    syscall(SYS_exit_group, 0);
}

static PyObject *s_write(PyObject *self, PyObject *args)
{
    (void)self;
    int       stream;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "iU", &stream, &text)) return NULL;
    if (!s_area) Py_RETURN_NONE;
    Py_ssize_t  len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
    PyObject   *encoded = NULL;
    if (!utf8) { /* lone surrogates: keep them visible rather than fail the print */
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(text, "utf-8", "backslashreplace");
        if (!encoded) return NULL;
        utf8 = PyBytes_AS_STRING(encoded);
        len = PyBytes_GET_SIZE(encoded);
    }
    area_hdr_t        *h = area_hdr(s_area);
    volatile uint32_t *used = stream == 2 ? &h->err_len : &h->out_len;
    volatile uint32_t *trunc = stream == 2 ? &h->err_trunc : &h->out_trunc;
    uint8_t           *dst = stream == 2 ? area_err(s_area) : area_out(s_area);
    uint32_t           cap = h->out_limit, have = *used;
    size_t             room = have < cap ? cap - have : 0;
    size_t             n = (size_t)len < room ? (size_t)len : room;
    memcpy(dst + have, utf8, n);
    *used = have + (uint32_t)n;
    Py_XDECREF(encoded);
    if ((size_t)len > room) {
        *trunc = 1;
        s_output_limit();
    }
    Py_RETURN_NONE;
}

static PyObject *s_started(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (s_area) {
        area_hdr(s_area)->code_start_ns = s_now_ns();
        area_hdr(s_area)->phase = AREA_STARTED;
    }
    Py_RETURN_NONE;
}

static PyObject *s_stopped(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (s_area && !area_hdr(s_area)->code_end_ns) {
        area_hdr(s_area)->code_end_ns = s_now_ns();
        area_hdr(s_area)->phase = AREA_STOPPED;
    }
    Py_RETURN_NONE;
}

/* traceback(tb) -> [(filename, lineno, name)], read from the C structs: reading tb_frame
 * from Python is an audited (and here blocked) event. */
static PyObject *s_traceback(PyObject *self, PyObject *tb)
{
    (void)self;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    int depth = 0;
    while (tb && PyTraceBack_Check(tb) && depth++ < 200) {
        PyTracebackObject *t = (PyTracebackObject *)tb;
        PyCodeObject      *code = PyFrame_GetCode(t->tb_frame);
        PyObject *item = Py_BuildValue("(OiO)", code->co_filename, t->tb_lineno, code->co_name);
        Py_DECREF(code);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
        tb = (PyObject *)t->tb_next;
    }
    return list;
}

static void s_kv_text(mpw_t *w, const char *key, PyObject *value)
{
    mpw_str(w, key);
    Py_ssize_t  len;
    const char *s = value && PyUnicode_Check(value) ? PyUnicode_AsUTF8AndSize(value, &len) : NULL;
    if (s)
        mpw_strn(w, s, (size_t)len);
    else {
        PyErr_Clear();
        mpw_nil(w);
    }
}

/* The figures the runner rendered: a list of (mime, width, height, png bytes). Malformed
 * entries are skipped (the runner built the list, but the job's code ran in between). */
static void s_kv_images(mpw_t *w, PyObject *images, int truncated)
{
    Py_ssize_t n = images && PyList_Check(images) ? PyList_GET_SIZE(images) : 0, ok = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(images, i);
        ok += PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 4 && PyBytes_Check(PyTuple_GET_ITEM(t, 3));
    }
    mpw_str(w, "images");
    mpw_array(w, (uint32_t)ok);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(images, i);
        if (!(PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 4 && PyBytes_Check(PyTuple_GET_ITEM(t, 3))))
            continue;
        PyObject   *mime = PyTuple_GET_ITEM(t, 0), *data = PyTuple_GET_ITEM(t, 3);
        long        width = PyLong_Check(PyTuple_GET_ITEM(t, 1)) ? PyLong_AsLong(PyTuple_GET_ITEM(t, 1)) : 0;
        long        height = PyLong_Check(PyTuple_GET_ITEM(t, 2)) ? PyLong_AsLong(PyTuple_GET_ITEM(t, 2)) : 0;
        const char *m = PyUnicode_Check(mime) ? PyUnicode_AsUTF8(mime) : NULL;
        PyErr_Clear();
        mpw_map(w, 4);
        mpw_kv_str(w, "mime", m ? m : "image/png");
        mpw_kv_int(w, "width", width > 0 ? width : 0);
        mpw_kv_int(w, "height", height > 0 ? height : 0);
        mpw_str(w, "data");
        mpw_bin(w, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data));
    }
    mpw_kv_bool(w, "images_truncated", truncated);
}

/* finish(status, *, result, variables, error_type, error_message, traceback, line, validation,
 * images, images_truncated). Packs the runner's findings into the meta area as a msgpack map. */
static PyObject *s_finish(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"status", "result", "variables", "error_type", "error_message",
                             "traceback", "line", "validation", "images", "images_truncated", NULL};
    const char  *status;
    PyObject    *result = NULL, *variables = NULL, *etype = NULL, *emsg = NULL, *tb = NULL,
             *validation = NULL, *images = NULL;
    long line = 0;
    int  images_truncated = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|$OOOOOlOOp", kwlist, &status, &result, &variables,
                                     &etype, &emsg, &tb, &line, &validation, &images,
                                     &images_truncated))
        return NULL;
    if (!s_area) Py_RETURN_NONE;
    buf_t out;
    buf_init(&out);
    mpw_t w;
    mpw_init(&w, &out);
    int with_images = images && images != Py_None;
    mpw_map(&w, 5 + (with_images ? 2 : 0));
    mpw_kv_str(&w, "status", status);
    s_kv_text(&w, "result", result);
    s_kv_text(&w, "variables", variables);
    s_kv_text(&w, "validation", validation);
    mpw_str(&w, "error");
    if (etype && etype != Py_None) {
        mpw_map(&w, 4);
        s_kv_text(&w, "type", etype);
        s_kv_text(&w, "message", emsg);
        s_kv_text(&w, "traceback", tb);
        mpw_kv_int(&w, "line", line);
    } else {
        mpw_nil(&w);
    }
    if (with_images) s_kv_images(&w, images, images_truncated);
    area_hdr_t *h = area_hdr(s_area);
    if (out.len <= JOBAREA_META_CAP) {
        memcpy(area_meta(s_area), out.data, out.len);
        h->meta_len = (uint32_t)out.len;
    } else { /* an enormous result or variable set: report that rather than a cut message */
        buf_reset(&out);
        mpw_init(&w, &out);
        mpw_map(&w, 2);
        mpw_kv_str(&w, "status", "output_limit");
        mpw_str(&w, "error");
        mpw_map(&w, 2);
        mpw_kv_str(&w, "type", "OutputLimit");
        mpw_kv_str(&w, "message", "the result and variables exceed the executor's meta cap");
        memcpy(area_meta(s_area), out.data, out.len);
        h->meta_len = (uint32_t)out.len;
    }
    buf_free(&out);
    if (!h->code_end_ns) h->code_end_ns = s_now_ns();
    h->finish_ns = s_now_ns();
    h->phase = AREA_FINISHED;
    Py_RETURN_NONE;
}

static PyMethodDef s_methods[] = {
    {"write", s_write, METH_VARARGS, "write(stream, text): append to the job's output"},
    {"started", s_started, METH_NOARGS, "mark the start of the user's code"},
    {"stopped", s_stopped, METH_NOARGS, "mark the end of the user's code"},
    {"traceback", s_traceback, METH_O, "traceback(tb) -> [(filename, lineno, name)]"},
    {"finish", (PyCFunction)(void (*)(void))s_finish, METH_VARARGS | METH_KEYWORDS,
     "finish(status, **fields): record the job's outcome"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef s_module = {PyModuleDef_HEAD_INIT, "_snakepit", NULL, -1, s_methods,
                                      NULL, NULL, NULL, NULL};

static PyObject *s_module_init(void)
{
    return PyModule_Create(&s_module);
}

/* ---- zygote side ------------------------------------------------------------------------ */

static int s_pyerr(char *err, size_t errlen, const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject   *s = value ? PyObject_Str(value) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(err, errlen, "%s: %s", what, msg ? msg : "unknown Python error");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return -1;
}

static int s_import_all(const char *const *names, char *err, size_t errlen)
{
    for (const char *const *m = names; m && *m; m++) {
        PyObject *mod = PyImport_ImportModule(*m);
        if (!mod) {
            char what[160];
            snprintf(what, sizeof what, "warm import of %s", *m);
            return s_pyerr(err, errlen, what);
        }
        Py_DECREF(mod);
    }
    return 0;
}

int py_init(const profile_t *profile, const char *program, char *err, size_t errlen)
{
    s_profile = profile;
    if (PyImport_AppendInittab("_snakepit", s_module_init) < 0) {
        snprintf(err, errlen, "cannot register _snakepit");
        return -1;
    }
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config); /* -I: no environment, no user site, no cwd in path */
    config.site_import = 0;               /* -S */
    config.install_signal_handlers = 0;   /* the zygote owns its signals */
    config.write_bytecode = 0;
    config.parse_argv = 0;
    config.buffered_stdio = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, program);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "Python initialisation failed: %s",
                 st.err_msg ? st.err_msg : "unknown");
        return -1;
    }
    PyObject *ver = PySys_GetObject("version"); /* borrowed */
    const char *v = ver ? PyUnicode_AsUTF8(ver) : "?";
    snprintf(s_version, sizeof s_version, "%.*s", (int)strcspn(v, " "), v);

    /* Debian's dist-packages for the warm imports only: runner.prepare empties sys.path. */
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    for (const char *const *p = profile->site_paths; path && p && *p; p++) {
        PyObject *entry = PyUnicode_FromString(*p);
        if (!entry || PyList_Append(path, entry) < 0) {
            Py_XDECREF(entry);
            return s_pyerr(err, errlen, "sys.path");
        }
        Py_DECREF(entry);
    }
    /* matplotlib writes its font cache under $MPLCONFIGDIR (else under $HOME, which a root
     * zygote would create on the host): a private directory, removed by runner.prepare once
     * the cache is in memory. */
    if (profile->figures &&
        PyRun_SimpleString("import os, tempfile\n"
                           "os.environ['MPLCONFIGDIR'] = tempfile.mkdtemp(prefix='snakepit-mpl-')\n") != 0) {
        snprintf(err, errlen, "matplotlib cache directory could not be made");
        return -1;
    }

    if (s_import_all(profile->modules, err, errlen) < 0) return -1;
    if (s_import_all(profile->preload, err, errlen) < 0) return -1;

    PyObject *code = Py_CompileString(runner_py, "<snakepit-runner>", Py_file_input);
    if (!code) return s_pyerr(err, errlen, "compiling the runner");
    PyObject *runner = PyImport_ExecCodeModule("_snakepit_runner", code);
    Py_DECREF(code);
    if (!runner) return s_pyerr(err, errlen, "loading the runner");
    s_run_fn = PyObject_GetAttrString(runner, "run");
    s_validate_fn = PyObject_GetAttrString(runner, "validate");
    PyObject *prepare = PyObject_GetAttrString(runner, "prepare");
    PyObject *versions = PyObject_GetAttrString(runner, "versions");
    Py_DECREF(runner);
    if (!s_run_fn || !s_validate_fn || !prepare || !versions)
        return s_pyerr(err, errlen, "runner entry points");
    PyObject *mods = PyList_New(0);
    for (const char *const *m = profile->modules; mods && *m; m++) {
        PyObject *name = PyUnicode_FromString(*m);
        if (!name || PyList_Append(mods, name) < 0) Py_CLEAR(mods);
        Py_XDECREF(name);
    }
    PyObject *r = mods ? PyObject_CallFunction(prepare, "siiO", profile->name, profile->workspace,
                                               profile->figures, mods)
                       : NULL;
    Py_XDECREF(mods);
    Py_DECREF(prepare);
    if (!r) {
        Py_DECREF(versions);
        return s_pyerr(err, errlen, "runner.prepare");
    }
    Py_DECREF(r);
    r = PyObject_CallNoArgs(versions);
    Py_DECREF(versions);
    const char *vs = r && PyUnicode_Check(r) ? PyUnicode_AsUTF8(r) : NULL;
    if (!vs) {
        Py_XDECREF(r);
        return s_pyerr(err, errlen, "runner.versions");
    }
    s_versions = strdup(vs);
    Py_DECREF(r);

    if (PySys_AddAuditHook(s_audit_hook, NULL) < 0) return s_pyerr(err, errlen, "audit hook");
    /* Everything allocated so far moves to the permanent generation: a child's collections
     * never visit (and so never copy-on-write) the zygote's objects. */
    if (PyRun_SimpleString("import gc; gc.collect(); gc.freeze()") != 0) {
        snprintf(err, errlen, "gc.freeze failed");
        return -1;
    }
    /* Give back the heap the warm-up freed: every fork copies the page tables of what stays
     * (8 MB less for python.data_science). */
    malloc_trim(0);
    return 0;
}

const char *py_version(void)
{
    return s_version;
}

const char *py_versions(void)
{
    return s_versions ? s_versions : "{}";
}

void py_after_fork(void)
{
    PyOS_AfterFork_Child();
}


/* ---- child side ------------------------------------------------------------------------- */

static PyObject *s_names_tuple(char **names, size_t n)
{
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, (Py_ssize_t)i, PyUnicode_FromString(names[i]));
    return t;
}

static PyObject *s_allowed(const jobspec_t *job, const profile_t *profile)
{
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    if (job->n_allowed_imports) { /* the call narrows the profile's list, never widens it */
        for (size_t i = 0; i < job->n_allowed_imports; i++)
            if (profile_allows(profile, job->allowed_imports[i])) {
                PyObject *s = PyUnicode_FromString(job->allowed_imports[i]);
                PyList_Append(list, s);
                Py_XDECREF(s);
            }
    } else {
        for (const char *const *m = profile->modules; *m; m++) {
            PyObject *s = PyUnicode_FromString(*m);
            PyList_Append(list, s);
            Py_XDECREF(s);
        }
    }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}

static PyObject *s_job_dict(const jobspec_t *job, const profile_t *profile)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    PyObject *code = PyUnicode_DecodeUTF8(job->code, (Py_ssize_t)job->code_len, "replace");
    PyObject *stdin_text = job->stdin_data
                               ? PyUnicode_DecodeUTF8(job->stdin_data, (Py_ssize_t)job->stdin_len, "replace")
                               : Py_NewRef(Py_None);
    PyObject *items[][2] = {
        {PyUnicode_FromString("code"), code},
        {PyUnicode_FromString("allowed"), s_allowed(job, profile)},
        {PyUnicode_FromString("profile"), PyUnicode_FromString(profile->name)},
        {PyUnicode_FromString("inspect"), s_names_tuple(job->inspect, job->n_inspect)},
        {PyUnicode_FromString("stdin"), stdin_text},
        {PyUnicode_FromString("capture"), PyBool_FromLong(job->capture_output)},
        {PyUnicode_FromString("workspace"), PyBool_FromLong(profile->workspace)},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        if (!items[i][0] || !items[i][1] || PyDict_SetItem(d, items[i][0], items[i][1]) < 0) ok = 0;
        Py_XDECREF(items[i][0]);
        Py_XDECREF(items[i][1]);
    }
    if (!ok) Py_CLEAR(d);
    return d;
}

void py_run_job(const jobspec_t *job, const profile_t *profile, area_t *area, int policy)
{
    s_area = area;
    PyObject *d = s_job_dict(job, profile);
    if (d) {
        PyObject *p = PyBool_FromLong(policy);
        PyDict_SetItemString(d, "policy", p);
        Py_DECREF(p);
    }
    s_armed = policy; /* from here on every audited event goes through the policy */
    PyObject *r = d ? PyObject_CallOneArg(job->kind == JOB_VALIDATE ? s_validate_fn : s_run_fn, d) : NULL;
    if (!r) {
        /* The runner itself failed (MemoryError while formatting, a hostile object…): record
         * what we can; the zygote turns a missing meta into a clear status. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        area_hdr_t *h = area ? area_hdr(area) : NULL;
        if (h && !h->meta_len && type && PyErr_GivenExceptionMatches(type, PyExc_MemoryError)) {
            buf_t out;
            buf_init(&out);
            mpw_t w;
            mpw_init(&w, &out);
            mpw_map(&w, 1);
            mpw_kv_str(&w, "status", "memory_limit");
            memcpy(area_meta(area), out.data, out.len);
            h->meta_len = (uint32_t)out.len;
            buf_free(&out);
        }
    }
    Py_XDECREF(r);
    Py_XDECREF(d);
}
