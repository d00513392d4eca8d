/* executor-node/zygote/envprofile.h — the profile a dependency environment's zygote serves: its base
 * profile (common/profiles.c) plus the environment (envs.h). The environment's site-packages
 * comes first on the warm-up's sys.path (an upgraded package wins over the system's) and is
 * readable inside the sandbox (a package may read its own data files); its top-level modules
 * are imported in the zygote and importable by jobs. Everything downstream — the warm imports,
 * the import allowlist, Landlock, the mount namespace, the audit hook — reads the derived
 * profile exactly as it reads a table entry. Unpickling stays limited to the base profile's. */
#ifndef SP_ENVPROFILE_H
#define SP_ENVPROFILE_H
#include "common/profiles.h"

/* A new profile: base with the environment at site (a directory) adding modules
 * (comma-separated). NULL with the reason in err. Lives as long as the zygote. */
const profile_t *envprofile_new(const profile_t *base, const char *site, const char *modules,
                                char *err, size_t errlen);

#endif
