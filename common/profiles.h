/* common/profiles.h — the sandbox profiles, in one table: the executor preloads and allows
 * exactly these modules, the front-end publishes the same table in get_sandbox_info, so the
 * two cannot disagree. A profile is also a broker service name. */
#ifndef SP_PROFILES_H
#define SP_PROFILES_H
#include <stddef.h>

#include "limits.h"

typedef struct {
    const char         *name;      /* service name: "python.basic" */
    const char         *summary;
    const char *const  *modules;   /* importable by user code; "xml.etree" allows its submodules */
    const char *const  *preload;   /* also imported in the zygote: lazy internals of the above */
    const char *const  *unpickle;  /* what unpickling may name: data types, never os & co. */
    limits_t            defaults;  /* applied when a call gives no limit */
    limits_t            max;       /* a call's limits are clamped to these */
    const char *const  *ro_paths;  /* host directories visible read-only inside the sandbox */
    const char *const  *site_paths; /* sys.path entries for the warm imports (Debian's
                                         dist-packages), emptied once they are done */
    int                 workspace;   /* a per-job directory the code may read and write */
    long                workspace_mb; /* its size (a tmpfs of its own), also the largest file */
    int                 figures;     /* matplotlib figures come back as PNG images */
    /* A dependency environment's zygote (executor-node/envprofile.h) only; NULL in the table. */
    const char         *env_site;    /* where its site-packages is, as the job sees it */
    const char *const  *env_modules; /* the top-level modules it adds: in `modules` (allowed),
                                        imported by the job from env_site, never by the zygote */
} profile_t;

extern const profile_t profiles[];
extern const size_t    n_profiles;
/* Read-only in every profile for jobs with network egress (and mounted in the sealed root of
 * zygotes that serve such jobs, under /usr, so that the root a job sees stays as it was): the
 * system's CA certificates — /usr/lib/ssl/certs is OpenSSL's directory (the host's link to
 * /etc/ssl/certs, mounted as the directory it points to), and the bundle in it is what a job's
 * SSL_CERT_FILE and REQUESTS_CA_BUNDLE name (egress.py). */
extern const char *const egress_ro_paths[];

const profile_t *profile_find(const char *name);
/* The profile a call runs in when it names none: the table's first entry. */
const profile_t *profile_default(void);
/* Fills zeros with the profile's defaults, then clamps each limit to its maximum. */
void profile_apply_limits(const profile_t *p, limits_t *l);
/* The names of the profiles that keep() accepts (all when NULL), joined by sep, for texts that
 * list them (tool descriptions, errors, --help). Returns how many were joined; out is always
 * terminated, cut short when outlen is too small. */
size_t profiles_join(char *out, size_t outlen, const char *sep, int (*keep)(const profile_t *));
/* A keep() for profiles_join: profiles with a per-job workspace. */
int profile_has_workspace(const profile_t *p);
/* 1 when module (dotted) may be imported under this profile. */
int profile_allows(const profile_t *p, const char *module);
/* The import name of a distribution ("scikit-learn" → "sklearn", "Foo-Bar" → "foo_bar"),
 * written into buf when it is not a constant. */
const char *profile_dist_module(const char *dist, char *buf, size_t cap);
/* 1 when module is one of the standard library's "ordinary" modules every profile has imported
 * now (os, sys, subprocess, socket, shutil…): the drop-in endpoints narrow them
 * away again, because the servers they stand in for refused them at import. */
int profile_module_is_ordinary(const char *module);
/* 1 when module is the sandbox's own, not a package's (IPython: the part of IPython.display
 * the executor implements, executor-node/python/ipython.py): nothing to install for it. */
int profile_module_is_the_sandboxs(const char *module);
/* 1 when the profile has distribution dist (a PEP 723 or `dependencies` name) installed. */
int profile_provides(const profile_t *p, const char *dist);
/* Where a call that names no profile runs when its code declares dependencies (the names of a
 * PEP 723 block): the first profile, in table order, that keep(p, arg) accepts (every one when
 * keep is NULL) that has every name, as a module or as a distribution (profile_provides). NULL
 * when none does: the caller's
 * default applies, and the executor names what is missing. */
const profile_t *profile_for_dependencies(const char *const *names, size_t n,
                                          int (*keep)(const profile_t *, void *), void *arg);

#endif
