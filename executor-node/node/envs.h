/* executor-node/node/envs.h — dependency environments: what a job's `dependencies` (the
 * execute_code argument, a PEP 723 block) need beyond its profile, resolved from the
 * operator's package source (--packages: a wheel directory, or an index URL) into a cached,
 * read-only environment that a zygote of its own then serves.
 *
 * A requested set (profile + sorted requirements + source) is a key. The first job with a key
 * starts a build: envbuild.py, run by the node as /usr/bin/python3 outside any sandbox (never
 * by tenant code), resolves with Debian's pip and installs into ENVS_DIR/<profile>/<hash of the
 * resolved set>; one line per fact comes back on a pipe the loop watches. The answer is kept in
 * memory and on disk (a later node on the same disk skips pip), and is one of:
 *   READY   an environment: its site-packages and top-level modules (zygotes.h starts its
 *           zygote, which the node routes the key's jobs to)
 *   BASE    the profile's own packages meet the set: jobs go to the profile's zygote
 *   FAILED  unresolvable (the message names the requirement and what the source has): jobs
 *           are answered with it; kept a minute, then a new job retries (the operator may
 *           have added a wheel)
 * Jobs wait meanwhile in the node's slots (node.c); builds are bounded in time and number. */
#ifndef SP_ENVS_H
#define SP_ENVS_H
#include <stddef.h>

#include "common/loop.h"
#include "common/profiles.h"
#include "node_conf.h"

typedef struct envs envs_t;

typedef enum { ENV_BUILDING = 0, ENV_READY, ENV_BASE, ENV_FAILED } env_state_t;

typedef struct {
    /* An environment's build ended (READY, BASE or FAILED): waiting jobs can move on. */
    void (*on_built)(void *arg, int env);
    void *arg;
} envs_hooks_t;

envs_t *envs_new(loop_t *loop, const node_conf_t *conf, const envs_hooks_t *hooks);
/* Kills a build still running (by pid) and frees everything. */
void envs_destroy(envs_t **self_p);
/* 1 when the node has a package source (without one, dependencies are the profile's only). */
int envs_enabled(const envs_t *self);
/* The environment of a requested set, looked up or started; -1 when none can be tracked now
 * (too many at once: the job is answered rejected). */
int envs_request(envs_t *self, const profile_t *profile, char *const *reqs, size_t n);
env_state_t envs_state(const envs_t *self, int env);
const char *envs_key(const envs_t *self, int env);     /* 48 hex digits */
const char *envs_site(const envs_t *self, int env);    /* READY: site-packages */
const char *envs_modules(const envs_t *self, int env); /* READY: comma-separated */
const char *envs_error(const envs_t *self, int env);   /* FAILED: why */
const profile_t *envs_profile(const envs_t *self, int env);

#endif
