/* deploy/debian/profile_modules.c — prints what each sandbox profile imports, straight from the
 * profiles table (common/profiles.c), one "PROFILE MODULE" line per module a call may import
 * and per module the zygote imports ahead (preload), profiles in table order: the first is the
 * default one. Modules the sandbox implements itself (IPython.display) have no package and
 * are left out.
 *
 * build-deb.sh turns these into the package's Depends (the default profile's modules) and
 * Recommends (every other profile's), by asking dpkg which package owns each module's files,
 * so the package's relationships are derived from the one table the executor itself reads and
 * cannot drift from it; tests/package checks the built package against it the same way. */
#include <stdio.h>

#include "common/profiles.h"

static void s_print(const char *profile, const char *const *modules)
{
    for (const char *const *m = modules; m && *m; m++)
        if (!profile_module_is_the_sandboxs(*m)) printf("%s %s\n", profile, *m);
}

int main(void)
{
    for (size_t i = 0; i < n_profiles; i++) {
        s_print(profiles[i].name, profiles[i].modules);
        s_print(profiles[i].name, profiles[i].preload);
    }
    return ferror(stdout) ? 1 : 0;
}
