/* executor-node/python/runner_session.c — see runner_session.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "runner_session.h"

static Py_ssize_t s_count(PyObject *dict, int want_bytes)
{
    Py_ssize_t pos = 0, n = 0;
    PyObject *k, *v;
    while (PyDict_Next(dict, &pos, &k, &v))
        n += PyUnicode_Check(k) && (want_bytes ? PyBytes_Check(v) : PyUnicode_Check(v));
    return n;
}

/* {name: bytes} or {name: str}: only the entries of those types. */
static void s_pack_dict(mpw_t *w, const char *key, PyObject *dict, int bytes)
{
    mpw_str(w, key);
    if (!PyDict_Check(dict)) {
        mpw_map(w, 0);
        return;
    }
    mpw_map(w, (uint32_t)s_count(dict, bytes));
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || !(bytes ? PyBytes_Check(v) : PyUnicode_Check(v))) continue;
        Py_ssize_t kl, vl;
        const char *ks = PyUnicode_AsUTF8AndSize(k, &kl);
        const char *vs = bytes ? PyBytes_AS_STRING(v) : PyUnicode_AsUTF8AndSize(v, &vl);
        if (bytes) vl = PyBytes_GET_SIZE(v);
        if (!ks || !vs) { /* a name that is not UTF-8: an empty entry keeps the count right */
            PyErr_Clear();
            ks = "", kl = 0, vs = "", vl = 0;
        }
        mpw_strn(w, ks, (size_t)kl);
        if (bytes)
            mpw_bin(w, vs, (size_t)vl);
        else
            mpw_strn(w, vs, (size_t)vl);
    }
}

static void s_pack_skipped(mpw_t *w, PyObject *list)
{
    Py_ssize_t n = PyList_Check(list) ? PyList_GET_SIZE(list) : 0, ok = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(list, i);
        ok += PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2;
    }
    mpw_str(w, "skipped");
    mpw_array(w, (uint32_t)ok);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(list, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) continue;
        const char *name = PyUnicode_Check(PyTuple_GET_ITEM(t, 0))
                               ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0))
                               : NULL;
        const char *why = PyUnicode_Check(PyTuple_GET_ITEM(t, 1))
                              ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 1))
                              : NULL;
        PyErr_Clear();
        mpw_map(w, 2);
        mpw_kv_str(w, "name", name ? name : "?");
        mpw_kv_str(w, "reason", why ? why : "?");
    }
}

void runner_pack_snapshot(mpw_t *w, PyObject *snapshot)
{
    int ok = PyTuple_Check(snapshot) && PyTuple_GET_SIZE(snapshot) == 3;
    mpw_str(w, "snapshot");
    mpw_map(w, 3);
    s_pack_dict(w, "variables", ok ? PyTuple_GET_ITEM(snapshot, 0) : Py_None, 1);
    s_pack_dict(w, "imports", ok ? PyTuple_GET_ITEM(snapshot, 1) : Py_None, 0);
    s_pack_skipped(w, ok ? PyTuple_GET_ITEM(snapshot, 2) : Py_None);
}

/* {name: bin} or {name: str} into dict; 0, or -1 on a malformed map or a Python error. */
static int s_read_dict(mpr_t *r, PyObject *dict, int bytes)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return -1;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t kl, vl;
        const uint8_t *v;
        if (mpr_str(r, &k, &kl) < 0 || mpr_bytes(r, &v, &vl) < 0) return -1;
        PyObject *key = PyUnicode_DecodeUTF8(k, kl, "replace");
        PyObject *val = bytes ? PyBytes_FromStringAndSize((const char *)v, vl)
                              : PyUnicode_DecodeUTF8((const char *)v, vl, "replace");
        int rc = key && val ? PyDict_SetItem(dict, key, val) : -1;
        Py_XDECREF(key);
        Py_XDECREF(val);
        if (rc < 0) return -1;
    }
    return r->err ? -1 : 0;
}

PyObject *runner_snapshot_parts(const char *data, size_t len)
{
    PyObject *vars = PyDict_New(), *imports = PyDict_New();
    if (!vars || !imports) goto fail;
    mpr_t r;
    uint32_t n;
    mpr_init(&r, data ? data : "", data ? len : 0);
    if (data && mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t kl;
            int rc = 0;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "variables"))
                rc = s_read_dict(&r, vars, 1);
            else if (mpr_key_is(k, kl, "imports"))
                rc = s_read_dict(&r, imports, 0);
            else
                mpr_skip(&r);
            if (rc < 0 && PyErr_Occurred()) goto fail;
            if (rc < 0) break;
        }
    }
    PyObject *t = PyTuple_Pack(2, vars, imports);
    Py_DECREF(vars);
    Py_DECREF(imports);
    return t;
fail:
    Py_XDECREF(vars);
    Py_XDECREF(imports);
    return NULL;
}
