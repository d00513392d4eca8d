/* executor-node/python/runner.c — see runner.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/profiles.h"
#include "proto/job.h"
#include "proto/mpack.h"
#include "audit.h"
#include "runner.h"
#include "runner_session.h"

static area_t *s_area; /* the child's job area; NULL in the zygote (the probe prints nowhere) */
static int s_session;  /* a session's process: output past the cap ends the cell, not the process */
static PyObject *s_output_limit_exc; /* _snakepit.OutputLimit */

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
    int stream;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "iU", &stream, &text)) return NULL;
    if (!s_area) Py_RETURN_NONE;
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
    PyObject *encoded = NULL;
    if (!utf8) { /* lone surrogates: keep them visible rather than fail the print */
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(text, "utf-8", "backslashreplace");
        if (!encoded) return NULL;
        utf8 = PyBytes_AS_STRING(encoded);
        len = PyBytes_GET_SIZE(encoded);
    }
    area_hdr_t *h = area_hdr(s_area);
    volatile uint32_t *used = stream == 2 ? &h->err_len : &h->out_len;
    volatile uint32_t *trunc = stream == 2 ? &h->err_trunc : &h->out_trunc;
    uint8_t *dst = stream == 2 ? area_err(s_area) : area_out(s_area);
    uint32_t cap = h->out_limit, have = *used;
    size_t room = have < cap ? cap - have : 0;
    size_t n = (size_t)len < room ? (size_t)len : room;
    memcpy(dst + have, utf8, n);
    *used = have + (uint32_t)n;
    Py_XDECREF(encoded);
    if ((size_t)len > room) {
        *trunc = 1;
        if (!s_session) s_output_limit();
        /* A session lives on: the cell ends with what fitted (each further write raises
         * again, so code that catches it gains nothing but its own time limit). */
        h->limit_hit = LIMIT_OUTPUT;
        PyErr_SetString(s_output_limit_exc, "output limit reached: the cell's output was cut");
        return NULL;
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
        PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
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
    Py_ssize_t len;
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
        if (!(PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 4 &&
              PyBytes_Check(PyTuple_GET_ITEM(t, 3))))
            continue;
        PyObject *mime = PyTuple_GET_ITEM(t, 0), *data = PyTuple_GET_ITEM(t, 3);
        long width =
            PyLong_Check(PyTuple_GET_ITEM(t, 1)) ? PyLong_AsLong(PyTuple_GET_ITEM(t, 1)) : 0;
        long height =
            PyLong_Check(PyTuple_GET_ITEM(t, 2)) ? PyLong_AsLong(PyTuple_GET_ITEM(t, 2)) : 0;
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

/* The rich outputs (rich.py): a list of (kind, index, mime, data bytes); malformed entries are
 * skipped, as for images. */
static int s_output_ok(PyObject *t)
{
    return PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 4 &&
           PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) && PyLong_Check(PyTuple_GET_ITEM(t, 1)) &&
           PyUnicode_Check(PyTuple_GET_ITEM(t, 2)) && PyBytes_Check(PyTuple_GET_ITEM(t, 3));
}

static void s_kv_outputs(mpw_t *w, PyObject *outputs, int truncated)
{
    Py_ssize_t n = outputs && PyList_Check(outputs) ? PyList_GET_SIZE(outputs) : 0, ok = 0;
    for (Py_ssize_t i = 0; i < n; i++) ok += s_output_ok(PyList_GET_ITEM(outputs, i));
    mpw_str(w, "outputs");
    mpw_array(w, (uint32_t)ok);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(outputs, i);
        if (!s_output_ok(t)) continue;
        const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0));
        const char *mime = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 2));
        long index = PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        PyErr_Clear();
        PyObject *data = PyTuple_GET_ITEM(t, 3);
        mpw_map(w, 4);
        mpw_kv_str(w, "kind", kind ? kind : "display");
        mpw_kv_int(w, "index", index > 0 ? index : 0);
        mpw_kv_str(w, "mime", mime ? mime : "text/plain");
        mpw_str(w, "data");
        mpw_bin(w, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data));
    }
    mpw_kv_bool(w, "outputs_truncated", truncated);
}

/* finish(status, *, result, variables, error_type, error_message, traceback, line, validation,
 * images, images_truncated, denied, outputs, outputs_truncated, snapshot, summary, exit_code).
 * Packs the
 * runner's findings into the meta area as a msgpack map; a session's snapshot and summaries are
 * runner_session.h's to pack. */
static PyObject *s_finish(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {
        "status",    "result",  "variables",         "error_type", "error_message",
        "traceback", "line",    "validation",        "images",     "images_truncated",
        "denied",    "outputs", "outputs_truncated", "snapshot",   "summary",
        "exit_code", NULL};
    const char *status;
    PyObject *result = NULL, *variables = NULL, *etype = NULL, *emsg = NULL, *tb = NULL,
             *validation = NULL, *images = NULL, *outputs = NULL, *snapshot = NULL, *summary = NULL;
    long line = 0, exit_code = 0;
    int images_truncated = 0, denied = 0, outputs_truncated = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|$OOOOOlOOppOpOOl", kwlist, &status, &result,
                                     &variables, &etype, &emsg, &tb, &line, &validation, &images,
                                     &images_truncated, &denied, &outputs, &outputs_truncated,
                                     &snapshot, &summary, &exit_code))
        return NULL;
    if (!s_area) Py_RETURN_NONE;
    buf_t out;
    buf_init(&out);
    mpw_t w;
    mpw_init(&w, &out);
    int with_images = images && images != Py_None;
    int with_outputs = outputs && outputs != Py_None;
    int with_snapshot = snapshot && snapshot != Py_None,
        with_summary = summary && summary != Py_None;
    mpw_map(&w, 7 + (with_images ? 2 : 0) + (with_outputs ? 2 : 0) + (uint32_t)with_snapshot +
                    (uint32_t)with_summary);
    mpw_kv_str(&w, "status", status);
    mpw_kv_bool(&w, "denied", denied); /* a sandbox refusal is what ended the code */
    mpw_kv_int(&w, "exit_code", exit_code); /* sys.exit's status, as a process would end */
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
    if (with_snapshot) runner_pack_snapshot(&w, snapshot);
    if (with_summary) s_kv_text(&w, "summary", summary);
    if (with_outputs) s_kv_outputs(&w, outputs, outputs_truncated);
    area_hdr_t *h = area_hdr(s_area);
    if (area_put_meta(s_area, out.data, out.len) < 0)      /* an enormous result or variable set: */
        area_report(s_area, "output_limit", "OutputLimit", /* say so rather than cut the meta */
                    "the result and variables exceed the executor's meta cap");
    buf_free(&out);
    if (!h->code_end_ns) h->code_end_ns = s_now_ns();
    h->finish_ns = s_now_ns();
    h->phase = AREA_FINISHED;
    Py_RETURN_NONE;
}

static PyObject *s_snapshot_parts(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    const jobspec_t *job = s_area ? (const jobspec_t *)(void *)area_job(s_area) : NULL;
    return runner_snapshot_parts(job ? job->snapshot : NULL, job ? job->snapshot_len : 0);
}

static PyObject *s_pickle_allowed(PyObject *self, PyObject *args)
{
    (void)self;
    const char *module, *name;
    if (!PyArg_ParseTuple(args, "ss", &module, &name)) return NULL;
    return PyBool_FromLong(audit_unpickle_allowed(module, name));
}

/* judge(event, path=None, mode=None, num=None) -> (verdict, why): "allow", "deny" or "block",
 * as the audit hook would answer (audit_judge): validate_code's findings come from the rules
 * execute_code enforces. */
static PyObject *s_judge(PyObject *self, PyObject *args)
{
    (void)self;
    const char *event, *path = NULL, *mode = NULL;
    PyObject *num = Py_None;
    if (!PyArg_ParseTuple(args, "s|zzO", &event, &path, &mode, &num)) return NULL;
    long n = 0;
    int has_num = num != Py_None && PyLong_Check(num);
    if (has_num) {
        n = PyLong_AsLong(num);
        if (PyErr_Occurred()) return NULL;
    }
    const char *why = NULL;
    static const char *const verdicts[] = {"allow", "deny", "block"};
    int v = audit_judge(event, path, mode, n, has_num, &why);
    return Py_BuildValue("(sz)", verdicts[v >= 0 && v <= 2 ? v : 2], why);
}

/* profiles_with(module) -> (name, ...): the profiles of the table (common/profiles.c) that let
 * module be imported, in table order: what an import refusal points to. */
static PyObject *s_profiles_with(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *module = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!module) return PyErr_Occurred() ? NULL : PyTuple_New(0);
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < n_profiles; i++) {
        if (!profile_allows(&profiles[i], module)) continue;
        PyObject *name = PyUnicode_FromString(profiles[i].name);
        if (!name || PyList_Append(list, name) < 0) Py_CLEAR(list);
        Py_XDECREF(name);
    }
    PyObject *t = list ? PyList_AsTuple(list) : NULL;
    Py_XDECREF(list);
    return t;
}

static PyMethodDef s_methods[] = {
    {"write", s_write, METH_VARARGS, "write(stream, text): append to the job's output"},
    {"started", s_started, METH_NOARGS, "mark the start of the user's code"},
    {"stopped", s_stopped, METH_NOARGS, "mark the end of the user's code"},
    {"traceback", s_traceback, METH_O, "traceback(tb) -> [(filename, lineno, name)]"},
    {"finish", (PyCFunction)(void (*)(void))s_finish, METH_VARARGS | METH_KEYWORDS,
     "finish(status, **fields): record the job's outcome"},
    {"snapshot_parts", s_snapshot_parts, METH_NOARGS,
     "snapshot_parts() -> ({name: pickle}, {name: module}) of the snapshot being restored"},
    {"pickle_allowed", s_pickle_allowed, METH_VARARGS,
     "pickle_allowed(module, name): whether unpickling may name it (the audit hook's rule)"},
    {"judge", s_judge, METH_VARARGS,
     "judge(event, path=None, mode=None, num=None) -> (verdict, why): the audit hook's answer"},
    {"profiles_with", s_profiles_with, METH_O,
     "profiles_with(module) -> names of the profiles that allow importing it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef s_module = {
    PyModuleDef_HEAD_INIT, "_snakepit", NULL, -1, s_methods, NULL, NULL, NULL, NULL};

static PyObject *s_module_init(void)
{
    PyObject *m = PyModule_Create(&s_module);
    if (!m) return NULL;
    /* A BaseException: `except Exception` in the user's code does not swallow it. */
    s_output_limit_exc = PyErr_NewException("_snakepit.OutputLimit", PyExc_BaseException, NULL);
    /* what the audit hook raises, for the runner to tell a refusal that ended a job */
    PyObject *permission_error = audit_permission_error();
    if (!s_output_limit_exc || PyModule_AddObjectRef(m, "OutputLimit", s_output_limit_exc) < 0 ||
        !permission_error || PyModule_AddObjectRef(m, "PermissionError", permission_error) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

int runner_register(void)
{
    return PyImport_AppendInittab("_snakepit", s_module_init);
}

void runner_bind(area_t *area)
{
    s_area = area;
}

void runner_session(int on)
{
    s_session = on;
}
