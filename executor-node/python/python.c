/* executor-node/python/python.c — see python.h. The interpreter's life in a zygote and its
 * children; the C half of the runner (the _snakepit module) is runner.c, the audit hook audit.c,
 * and the Python sources (runner.py, validate.py, session.py, rich.py, ipython.py, dists.py,
 * warm.py) are compiled into this binary (the Makefile makes them C arrays). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <locale.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>

#include "common/log.h"
#include "executor-node/mem/holes.h"
#include "executor-node/mem/hugemem.h"
#include "audit.h"
#include "dists_py.h"
#include "ipython_py.h"
#include "pyfork.h"
#include "python.h"
#include "egress_py.h"
#include "rich_py.h"
#include "runner.h"
#include "runner_py.h"
#include "byvalue_py.h"
#include "session_py.h"
#include "validate_py.h"
#include "warm_py.h"

static PyObject *s_run_fn;      /* runner.run */
/* What every job's dict shares, made once in the zygote (s_shared): its keys, the profile's
 * whole import list (a job narrows it at most), names. A child allocates only its job's own
 * values — each allocation or free of a zygote object is a page it copies. */
enum { K_CODE, K_ALLOWED, K_PROFILE, K_INSPECT, K_STDIN, K_CAPTURE, K_WORKSPACE, K_FIGURES,
       K_DEPENDENCIES, K_WORKSPACE_DIR, K_POLICY, K_EGRESS, N_KEYS };
#define WARM_ROUNDS 16 /* 3.11 specialises a code object after 8 calls, an instruction later */
static const char *const s_key_names[N_KEYS] = {
    "code", "allowed", "profile", "inspect", "stdin", "capture", "workspace", "figure_format",
    "dependencies", "workspace_dir", "policy", "egress"};
static PyObject *s_keys[N_KEYS];
static PyObject *s_all_allowed; /* tuple: the profile's modules */
static PyObject *s_profile_name, *s_png, *s_svg, *s_no_dir;
static PyObject *s_validate_fn; /* validate.validate */
static PyObject *s_session;     /* the session module (session.py): its functions by kind */
static char      s_version[32];
static char     *s_versions;    /* JSON {package: version}, from runner.versions() */

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

static int s_listed(const char *const *names, const char *name)
{
    for (const char *const *m = names; m && *m; m++)
        if (!strcmp(*m, name)) return 1;
    return 0;
}

/* Every name but those of skip (a dependency environment's: envprofile.h). */
static int s_import_all(const char *const *names, const char *const *skip, char *err, size_t errlen)
{
    for (const char *const *m = names; m && *m; m++) {
        if (s_listed(skip, *m)) continue;
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

/* A list of str: names (NULL-terminated), or the names of the profiles keep() accepts. NULL
 * with a Python error set. */
static PyObject *s_str_list(const char *const *names, int (*keep)(const profile_t *))
{
    PyObject *list = PyList_New(0);
    size_t    n = names ? SIZE_MAX : n_profiles;
    for (size_t i = 0; list && i < n && (!names || names[i]); i++) {
        if (!names && !keep(&profiles[i])) continue;
        PyObject *s = PyUnicode_FromString(names ? names[i] : profiles[i].name);
        if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
        Py_XDECREF(s);
    }
    return list;
}

/* The interpreter itself: isolated (-I -S), with no signal handlers of its own (the zygote
 * owns its signals) and no bytecode written. */
static int s_interpreter(const char *program, char *err, size_t errlen)
{
    /* UTF-8 everywhere (file names, the file system encoding, open()'s default, locale): the
     * isolated pre-config leaves LC_CTYPE at "C", where CPython picks ASCII and a file named
     * café.csv cannot even be opened. The C.UTF-8 locale is loaded here, before the filesystem
     * is sealed, so a job's locale.setlocale(LC_ALL, "") still finds it in memory. */
    if (!setlocale(LC_ALL, "C.UTF-8")) log_warn("event=locale_unavailable locale=C.UTF-8");
    hugemem_arenas(); /* before any arena: they go end to end, ready for huge pages */
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    PyStatus pst = Py_PreInitialize(&pre);
    if (PyStatus_Exception(pst)) {
        snprintf(err, errlen, "Python pre-initialisation failed: %s",
                 pst.err_msg ? pst.err_msg : "unknown");
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
    PyObject   *ver = PySys_GetObject("version"); /* borrowed */
    const char *v = ver ? PyUnicode_AsUTF8(ver) : "?";
    snprintf(s_version, sizeof s_version, "%.*s", (int)strcspn(v, " "), v);
    return 0;
}

/* What the warm imports need to find, and only they: runner.prepare empties sys.path. */
static int s_warm_paths(const profile_t *profile, char *err, size_t errlen)
{
    /* Debian's dist-packages */
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
    return 0;
}

/* One of the runner's sources (compiled into this binary) as the module name, and its entry
 * point fn (a new reference in *fn). The module, borrowed from sys.modules; NULL with err. */
static PyObject *s_load(const char *source, const char *name, const char *fn_name, PyObject **fn,
                        char *err, size_t errlen)
{
    PyObject *code = Py_CompileString(source, "<snakepit-runner>", Py_file_input);
    PyObject *module = code ? PyImport_ExecCodeModule(name, code) : NULL;
    Py_XDECREF(code);
    *fn = module ? PyObject_GetAttrString(module, fn_name) : NULL;
    Py_XDECREF(module); /* sys.modules keeps it */
    if (!*fn) {
        char what[96];
        snprintf(what, sizeof what, "loading %s", name);
        s_pyerr(err, errlen, what);
        return NULL;
    }
    return module;
}

/* runner.prepare with the profile (its messages name profiles from the table, never from
 * their own text), then runner.versions for HELLO. */
static int s_prepare(PyObject *runner, const profile_t *profile, const char *env_host, char *err,
                     size_t errlen)
{
    PyObject *mods = s_str_list(profile->modules, NULL);
    PyObject *ws = s_str_list(NULL, profile_has_workspace);
    PyObject *env = s_str_list(profile->env_modules ? profile->env_modules : (const char *const[]){NULL}, NULL);
    PyObject *r = mods && ws && env ? PyObject_CallMethod(runner, "prepare", "siiOOsOs", profile->name,
                                                          profile->workspace, profile->figures, mods, ws,
                                                          profile->env_site ? profile->env_site : "", env,
                                                          env_host ? env_host : "")
                                    : NULL;
    Py_XDECREF(mods);
    Py_XDECREF(ws);
    Py_XDECREF(env);
    if (!r) return s_pyerr(err, errlen, "runner.prepare");
    Py_DECREF(r);
    r = PyObject_CallMethod(runner, "versions", NULL);
    const char *vs = r && PyUnicode_Check(r) ? PyUnicode_AsUTF8(r) : NULL;
    if (!vs) {
        Py_XDECREF(r);
        return s_pyerr(err, errlen, "runner.versions");
    }
    s_versions = strdup(vs);
    Py_DECREF(r);
    return 0;
}

/* s_keys and the rest, once; -1 with a Python error set. */
static int s_shared(const profile_t *profile)
{
    for (int k = 0; k < N_KEYS; k++)
        if (!(s_keys[k] = PyUnicode_InternFromString(s_key_names[k]))) return -1;
    PyObject *mods = s_str_list(profile->modules, NULL);
    s_all_allowed = mods ? PyList_AsTuple(mods) : NULL;
    Py_XDECREF(mods);
    s_profile_name = PyUnicode_FromString(profile->name);
    s_png = PyUnicode_InternFromString("png");
    s_svg = PyUnicode_InternFromString("svg");
    s_no_dir = PyUnicode_InternFromString("");
    return s_all_allowed && s_profile_name && s_png && s_svg && s_no_dir ? 0 : -1;
}

/* The runner's own paths run in the zygote before it forks, on code of ours: its functions
 * are then specialised (CPython 3.11's adaptive interpreter rewrites a code object as it
 * warms), its types have their attribute-cache tags and the interpreter's type cache its
 * entries, so a child reads all that instead of writing it into pages it must copy. What the
 * runs leave behind is reset by runner.fresh. */
static void s_warm_runs(const profile_t *profile, int policy)
{
    static const char *const snippets[] = {"x = 1\nprint(x)\n", "sum(range(10))\n",
                                           "raise ValueError('warm')\n"};
    jobspec_t job;
    jobspec_init(&job);
    job.tenant = "warm";
    job.service = (char *)profile->name;
    for (int round = 0; round < WARM_ROUNDS; round++)
        for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++) {
            job.code = (char *)snippets[i];
            job.code_len = strlen(job.code);
            py_run_job(&job, profile, NULL, policy, NULL);
        }
    audit_arm(NULL, 0);
    PyErr_Clear();
}

/* gc.collect(), then gc.freeze(): everything allocated so far moves to the permanent
 * generation, so a child's collections never visit (and copy-on-write) the zygote's objects. */
static int s_freeze(void)
{
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *r = gc ? PyObject_CallMethod(gc, "collect", NULL) : NULL;
    Py_XDECREF(r);
    r = r ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
    Py_XDECREF(gc);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

int py_init(const profile_t *profile, const char *program, int policy, const char *env_host,
            char *err, size_t errlen)
{
    if (runner_register() < 0) {
        snprintf(err, errlen, "cannot register _snakepit");
        return -1;
    }
    PyObject *warm_fn = NULL, *display_fn = NULL, *ipython_fn = NULL, *keep_fn = NULL;
    PyObject *enable_fn = NULL;
    if (s_interpreter(program, err, errlen) < 0 || s_warm_paths(profile, err, errlen) < 0)
        return -1;
    /* rich outputs and IPython.display first: the profiles list IPython, which the warm
     * imports below then find in sys.modules (ipython.py) */
    if (!s_load(rich_py, "_snakepit_rich", "display", &display_fn, err, errlen)) return -1;
    Py_DECREF(display_fn); /* the runner's builtins hold it */
    if (!s_load(ipython_py, "IPython.display", "display", &ipython_fn, err, errlen)) return -1;
    Py_DECREF(ipython_fn);
    if (s_import_all(profile->modules, profile->env_modules, err, errlen) < 0 ||
        s_import_all(profile->preload, NULL, err, errlen) < 0)
        return -1;
    if (!s_load(warm_py, "_snakepit_warm", "warm", &warm_fn, err, errlen)) return -1;
    Py_DECREF(warm_fn); /* runner.prepare calls it, for profiles that need it */
    if (!s_load(dists_py, "_snakepit_dists", "keep", &keep_fn, err, errlen)) return -1;
    Py_DECREF(keep_fn); /* runner.prepare fills it */
    if (!s_load(egress_py, "_snakepit_egress", "enable", &enable_fn, err, errlen)) return -1;
    Py_DECREF(enable_fn); /* the runner calls it for a job granted network egress */
    PyObject *runner = s_load(runner_py, "_snakepit_runner", "run", &s_run_fn, err, errlen);
    PyObject *start = NULL, *dumps = NULL;
    if (!runner ||
        !s_load(validate_py, "_snakepit_validate", "validate", &s_validate_fn, err, errlen) ||
        !s_load(byvalue_py, "_snakepit_byvalue", "dumps", &dumps, err, errlen) ||
        !(s_session = s_load(session_py, "_snakepit_session", "start", &start, err, errlen)) ||
        s_prepare(runner, profile, env_host, err, errlen) < 0)
        return -1;
    Py_DECREF(start);
    Py_DECREF(dumps); /* session.py holds the module */
    if (audit_install(profile) < 0) return s_pyerr(err, errlen, "audit hook");
    if (pyfork_prune_hooks() < 0) return s_pyerr(err, errlen, "after-fork hooks");
    if (s_shared(profile) < 0) return s_pyerr(err, errlen, "job fields");
    s_warm_runs(profile, policy);
    PyObject *r = PyObject_CallMethod(runner, "fresh", "i", policy);
    if (!r) return s_pyerr(err, errlen, "runner.fresh");
    Py_DECREF(r);
    if (s_freeze() < 0) return s_pyerr(err, errlen, "gc.freeze");
    /* Give back the heap the warm-up freed: every fork copies the page tables of what stays
     * (8 MB less for python.data_science). */
    malloc_trim(0);
    /* Last: what is allocated from now on lands in fresh memory (holes.h). */
    size_t pools = holes_fill_pools(), heap = holes_fill_heap();
    log_info("event=holes_filled pymalloc_bytes=%zu heap_bytes=%zu", pools, heap);
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
    if (!job->n_allowed_imports) return Py_NewRef(s_all_allowed);
    PyObject *list = PyList_New(0); /* the call narrows the profile's list, never widens it */
    for (size_t i = 0; list && i < job->n_allowed_imports; i++)
        if (profile_allows(profile, job->allowed_imports[i])) {
            PyObject *s = PyUnicode_FromString(job->allowed_imports[i]);
            if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
            Py_XDECREF(s);
        }
    PyObject *t = list ? PyList_AsTuple(list) : NULL;
    Py_XDECREF(list);
    return t;
}

static PyObject *s_job_dict(const jobspec_t *job, const profile_t *profile, const char *workspace,
                            int policy, const char *proxy)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    PyObject *values[N_KEYS] = {
        [K_CODE] = PyUnicode_DecodeUTF8(job->code, (Py_ssize_t)job->code_len, "replace"),
        [K_ALLOWED] = s_allowed(job, profile),
        [K_PROFILE] = Py_NewRef(s_profile_name),
        [K_INSPECT] = s_names_tuple(job->inspect, job->n_inspect),
        [K_STDIN] = job->stdin_data
                        ? PyUnicode_DecodeUTF8(job->stdin_data, (Py_ssize_t)job->stdin_len, "replace")
                        : Py_NewRef(Py_None),
        [K_CAPTURE] = PyBool_FromLong(job->capture_output),
        [K_WORKSPACE] = PyBool_FromLong(profile->workspace),
        [K_FIGURES] = Py_NewRef(job->figure_format == FIGURES_SVG ? s_svg : s_png),
        [K_DEPENDENCIES] = s_names_tuple(job->dependencies, job->n_dependencies),
        [K_WORKSPACE_DIR] = workspace && workspace[0] && profile->workspace
                                ? PyUnicode_DecodeFSDefault(workspace)
                                : Py_NewRef(s_no_dir),
        [K_POLICY] = PyBool_FromLong(policy),
        [K_EGRESS] = proxy && proxy[0] ? PyUnicode_FromString(proxy) : Py_NewRef(Py_None),
    };
    int ok = 1;
    for (int k = 0; k < N_KEYS; k++) {
        if (!values[k] || PyDict_SetItem(d, s_keys[k], values[k]) < 0) ok = 0;
        Py_XDECREF(values[k]);
    }
    if (!ok) Py_CLEAR(d);
    return d;
}

/* The function a job calls: the runner's or validate's, or in a session's process the
 * session module's for its kind (the first job starts the session, restoring when it is a
 * restore). A new reference, or NULL. */
static PyObject *s_entry(const jobspec_t *job, int session, int first)
{
    if (!session) return Py_NewRef(job->kind == JOB_VALIDATE ? s_validate_fn : s_run_fn);
    const char *fn = first                                  ? "start"
                     : job->kind == JOB_SESSION_SNAPSHOT    ? "snapshot"
                     : job->kind == JOB_SESSION_RESTORE     ? "restore"
                     : job->kind == JOB_SESSION_INFO        ? "info"
                                                            : "cell";
    return PyObject_GetAttrString(s_session, fn);
}

static void s_call(const jobspec_t *job, const profile_t *profile, area_t *area, int policy,
                   const char *workspace, int session, int first)
{
    runner_bind(area);
    runner_session(session);
    /* the proxy URL the zygote wrote for a job granted network egress (zygote.c), copied out of
     * the shared header so that the job's code cannot change what the hook was told */
    char proxy[sizeof area_hdr(area)->egress_proxy] = "";
    if (area) snprintf(proxy, sizeof proxy, "%.*s", (int)sizeof proxy - 1, area_hdr(area)->egress_proxy);
    PyObject *d = s_job_dict(job, profile, workspace, policy, proxy);
    if (d && first && job->kind == JOB_SESSION_RESTORE) PyDict_SetItemString(d, "restore", Py_True);
    audit_set_job(job->tenant, proxy[0] != '\0');
    audit_arm(area, policy); /* from here on every audited event goes through the policy */
    PyObject *fn = d ? s_entry(job, session, first) : NULL;
    PyObject *r = fn ? PyObject_CallOneArg(fn, d) : NULL;
    Py_XDECREF(fn);
    if (!r) {
        /* The runner itself failed (MemoryError while formatting, a hostile object…): record
         * what we can; the zygote turns a missing meta into a clear status. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        area_hdr_t *h = area ? area_hdr(area) : NULL;
        if (h && !h->meta_len && type && PyErr_GivenExceptionMatches(type, PyExc_MemoryError))
            area_report(area, "memory_limit", NULL, NULL);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    Py_XDECREF(r);
    Py_XDECREF(d);
}

void py_run_job(const jobspec_t *job, const profile_t *profile, area_t *area, int policy,
                const char *workspace)
{
    s_call(job, profile, area, policy, workspace, 0, 0);
}

void py_session_job(const jobspec_t *job, const profile_t *profile, area_t *area, int policy,
                    const char *workspace, int first)
{
    s_call(job, profile, area, policy, workspace, 1, first);
    /* A KeyboardInterrupt whose SIGINT came as the cell ended would surface in the next one:
     * its pending handler runs now, and what it raises is dropped. */
    if (PyErr_CheckSignals() < 0) PyErr_Clear();
}

void py_drop_signals(void)
{
    if (PyErr_CheckSignals() < 0) PyErr_Clear();
}
