/* cli/hub.h — the CURVE key pairs of a farm that executors on other machines may join.
 * ZeroMQ off the machine is CURVE only (broker/README.md), so when `snakepit up` is given an
 * executor endpoint others can reach, the broker and each local peer get a key pair in
 * STATE_DIR/keys, made once and kept. The peers' public halves go to keys/allowed/, the
 * broker's allowlist, where executors on other machines are added by hand. */
#ifndef SP_HUB_H
#define SP_HUB_H
#include <linux/limits.h>
#include <stddef.h>

#include "common/curve_cert.h"

typedef struct {
    char dir[PATH_MAX + 16]; /* STATE_DIR/keys */
    curve_cert_t broker;     /* the broker's pair: its public half is the peers' server key */
    curve_cert_t mcp;        /* the local front-end's */
    curve_cert_t cli;        /* the CLI's: the probe job, `snakepit run` straight to the broker */
} hub_keys_t;                /* the local executor's pair is only on disk: it reads its file */

/* Loads the key pairs from STATE_DIR/keys, making those that are missing. 0, or -1 with the
 * reason in err. */
int hub_keys_load(hub_keys_t *keys, const char *state_dir, char *err, size_t errlen);
/* Wipes the secret halves from memory. */
void hub_keys_clear(hub_keys_t *keys);

#endif
