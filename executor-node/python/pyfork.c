/* executor-node/python/pyfork.c — see pyfork.h. The interpreter's after-fork callbacks live in its
 * internal state (PyInterpreterState.after_forkers_child), hence the core headers in this one
 * file; they come with libpython3.11-dev and match the libpython this binary links. */
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>

#include "common/log.h"
#include "pyfork.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "pyfork.c knows CPython 3.11's after-fork hooks"
#endif

/* The callbacks a zygote's child does not need (pyfork.h says why): module, attribute. */
static const struct {
    const char *module;
    const char *attr;
} s_lock_hooks[] = {
    {"threading", "_after_fork"},                    /* new locks, threads marked stopped */
    {"logging", "_after_at_fork_child_reinit_locks"}, /* every handler's lock */
};

/* Whether f is one of s_lock_hooks, compared by identity with the modules' own objects. */
static int s_is_lock_hook(PyObject *f)
{
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    for (size_t i = 0; i < sizeof s_lock_hooks / sizeof s_lock_hooks[0]; i++) {
        PyObject *m = PyDict_GetItemString(modules, s_lock_hooks[i].module); /* borrowed */
        PyObject *hook = m ? PyObject_GetAttrString(m, s_lock_hooks[i].attr) : NULL;
        if (!hook) PyErr_Clear();
        int same = hook == f;
        Py_XDECREF(hook);
        if (same) return 1;
    }
    return 0;
}

int pyfork_prune_hooks(void)
{
    PyObject *hooks = PyInterpreterState_Get()->after_forkers_child; /* list or NULL */
    if (!hooks) return 0;
    if (!PyList_Check(hooks)) {
        PyErr_SetString(PyExc_TypeError, "after_forkers_child is not a list");
        return -1;
    }
    PyObject *keep = PyList_New(0);
    if (!keep) return -1;
    Py_ssize_t n = PyList_GET_SIZE(hooks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyList_GET_ITEM(hooks, i);
        if (!s_is_lock_hook(f) && PyList_Append(keep, f) < 0) {
            Py_DECREF(keep);
            return -1;
        }
    }
    int dropped = (int)(n - PyList_GET_SIZE(keep));
    int rc = PyList_SetSlice(hooks, 0, n, keep);
    Py_DECREF(keep);
    if (rc < 0) return -1;
    log_info("event=fork_hooks kept=%zd dropped=%d", PyList_GET_SIZE(hooks), dropped);
    return dropped;
}
