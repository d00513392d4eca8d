/* common/pep440.h — whether a profile's installed packages already meet a set of PEP 508
 * requirements, so that an executor node sends a job that declares only what its profile has
 * (a PEP 723 block asking for numpy and pandas, the common case) straight to the profile's
 * zygote, with no resolution. The comparison is runner.py's: release numbers only (pre-releases
 * and local labels ignored), markers not evaluated, extras ignored. Anything it cannot read
 * counts as unmet: the package source then decides. */
#ifndef SP_PEP440_H
#define SP_PEP440_H
#include <stddef.h>

/* packages: the zygote's HELLO JSON, {"normalised-name": "version", ...}. 1 when every
 * requirement is met; 0 otherwise. */
int pep440_all_met(const char *packages, char *const *reqs, size_t n);
/* PEP 503: runs of -_. as one -, lower case, into out (cut short rather than overrun); the name
 * ends at the first character that is not a letter, digit or separator. The one normaliser:
 * PEP 723 names (common/pep723.c), distributions (common/profiles.c), requirements. */
void pep440_normalise(const char *name, size_t len, char *out, size_t cap);

#endif
