/* executor-node/zygote/envprofile.h — the profile a dependency environment's zygote serves: its
 * base profile (common/profiles.c) plus the environment (envs.h). The environment's top-level
 * modules are allowed (the import allowlist reads `modules`) but never imported by the zygote:
 * a package's import-time code is the package author's, and the zygote, which forks every job
 * of the environment and maps the host's files until it seals its filesystem, must run only the
 * profile's own. A job imports them itself, inside every layer, from env_site — the
 * site-packages mounted read-only at a neutral path (ENVPROFILE_SITE), so that a module's
 * __file__ shows no host path — which Landlock and the audit hook let it read (ro_paths).
 * Unpickling stays limited to the base profile's. */
#ifndef SP_ENVPROFILE_H
#define SP_ENVPROFILE_H
#include "common/profiles.h"

#define ENVPROFILE_SITE "/deps" /* the environment's site-packages inside a sealed sandbox */

/* A new profile: base with the environment's site-packages visible to jobs at site (an
 * absolute path: ENVPROFILE_SITE, or the host's where the zygote has no mount namespace),
 * adding modules (comma-separated). NULL with the reason in err. Lives as long as the zygote. */
const profile_t *envprofile_new(const profile_t *base, const char *site, const char *modules,
                                char *err, size_t errlen);

#endif
