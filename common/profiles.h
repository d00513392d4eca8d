/* common/profiles.h — the sandbox profiles, in one table: the executor preloads and allows
 * exactly these modules, the front-end publishes the same table in get_sandbox_info, so the
 * two cannot disagree. A profile is also a broker service name. */
#ifndef SP_PROFILES_H
#define SP_PROFILES_H
#include <stddef.h>

#include "../proto/job.h"

typedef struct {
    const char         *name;      /* service name: "python.basic" */
    const char         *summary;
    const char *const  *modules;   /* importable by user code; "xml.etree" allows its submodules */
    const char *const  *preload;   /* also imported in the zygote: lazy internals of the above */
    limits_t            defaults;  /* applied when a call gives no limit */
    limits_t            max;       /* a call's limits are clamped to these */
    const char *const  *ro_paths;  /* host directories visible read-only inside the sandbox */
    const char *const  *site_paths; /* sys.path entries for the warm imports (Debian's
                                         dist-packages), emptied once they are done */
    int                 workspace;   /* a per-job directory the code may read and write */
    long                workspace_mb; /* its size (a tmpfs of its own), also the largest file */
    int                 figures;     /* matplotlib figures come back as PNG images */
} profile_t;

extern const profile_t profiles[];
extern const size_t    n_profiles;

const profile_t *profile_find(const char *name);
/* Clamps each limit to the profile's maximum and fills zeros with its defaults. */
void profile_apply_limits(const profile_t *p, limits_t *l);
/* 1 when module (dotted) may be imported under this profile. */
int profile_allows(const profile_t *p, const char *module);

#endif
