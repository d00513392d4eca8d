/* cli/hub.c — see hub.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "hub.h"

/* NAME's pair from the keys directory, made when there is none; with allow, its public half
 * is (also) put on the broker's allowlist. */
static int s_keypair(const char *dir, const char *name, curve_cert_t *cert, int allow, char *err,
                     size_t errlen)
{
    char sec[PATH_MAX + 80], pub[PATH_MAX + 80];
    snprintf(sec, sizeof sec, "%s/%s.key_secret", dir, name);
    snprintf(pub, sizeof pub, "%s/%s.key", dir, name);
    if (curve_cert_load(sec, cert, err, errlen) < 0 || !cert->secret_key[0]) {
        memset(cert, 0, sizeof *cert);
        snprintf(cert->name, sizeof cert->name, "%s", name);
        if (zmq_curve_keypair(cert->public_key, cert->secret_key) < 0 ||
            curve_cert_save(sec, cert, 1, 1, err, errlen) < 0 ||
            curve_cert_save(pub, cert, 0, 1, err, errlen) < 0)
            return -1;
    }
    if (allow) {
        snprintf(pub, sizeof pub, "%s/allowed/%s.key", dir, name);
        if (curve_cert_save(pub, cert, 0, 1, err, errlen) < 0) return -1;
    }
    return 0;
}

int hub_keys_load(hub_keys_t *k, const char *state_dir, char *err, size_t errlen)
{
    snprintf(k->dir, sizeof k->dir, "%s/keys", state_dir);
    char allowed[PATH_MAX + 32];
    snprintf(allowed, sizeof allowed, "%s/allowed", k->dir);
    if ((mkdir(k->dir, 0700) < 0 && errno != EEXIST) ||
        (mkdir(allowed, 0700) < 0 && errno != EEXIST)) {
        snprintf(err, errlen, "cannot create %.200s: %s", allowed, strerror(errno));
        return -1;
    }
    curve_cert_t executor;
    int rc = s_keypair(k->dir, "broker", &k->broker, 0, err, errlen) == 0 &&
                     s_keypair(k->dir, "local-executor", &executor, 1, err, errlen) == 0 &&
                     s_keypair(k->dir, "local-mcp", &k->mcp, 1, err, errlen) == 0 &&
                     s_keypair(k->dir, "local-cli", &k->cli, 1, err, errlen) == 0
                 ? 0
                 : -1;
    explicit_bzero(&executor, sizeof executor);
    return rc;
}

void hub_keys_clear(hub_keys_t *k)
{
    explicit_bzero(&k->broker, sizeof k->broker);
    explicit_bzero(&k->mcp, sizeof k->mcp);
    explicit_bzero(&k->cli, sizeof k->cli);
}
