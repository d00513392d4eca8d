/* common/pep508.h — what a tenant may ask a package source for: a PEP 508 requirement of the
 * plain form only, `name[extras] specifiers ; marker`, nothing pip would read as a place.
 *
 * Why a grammar and not a character check: pip decides what a requirement *is* from its
 * shape. `x-1.0.tar.gz`, `./pkg`, `pkg @ file:///…`, `-e .` or `--index-url=…` are not names
 * to resolve but archives, paths, URLs and options, and pip builds an archive or a path from
 * source — running its setup.py — wherever it finds one. So a requirement is accepted only
 * when it parses as a distribution name (not ending like an archive), optional extras,
 * optional version specifiers and an optional environment marker made of marker words,
 * quoted values and comparison operators; everything else is refused with the reason. The
 * front-end (tools' `dependencies`, PEP 723 blocks, the drop-in endpoints) and the executor
 * node (before any build) apply the same check. */
#ifndef SP_PEP508_H
#define SP_PEP508_H
#include <stddef.h>

#define PEP508_MAX 200 /* characters in one requirement (proto/job.h JOB_MAX_DEP) */

/* 0 when s[0..len) is such a requirement; -1 with the reason (quoting at most a few
 * characters of s) in err. */
int pep508_check(const char *s, size_t len, char *err, size_t errlen);

#endif
