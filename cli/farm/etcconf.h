/* cli/etcconf.h — the configuration an installed farm runs from: the `name = value` files in
 * /etc/snakepit (mcp.conf, broker.conf, executor.conf) that the package installs and its
 * systemd units read. The CLI reads the same files on a server, so `snakepit tenant`,
 * `status`, `usage`, `backup` and `restore` find the farm's Redis without --redis on every
 * call. $SNAKEPIT_CONF_DIR names another directory (tests, a second farm).
 *
 * Only what the CLI needs is read, one option at a time; the files are the units' and keep
 * their own syntax (common/config.h): `#` comments, blank lines, `name = value`. */
#ifndef SP_ETCCONF_H
#define SP_ETCCONF_H
#include <stddef.h>

#define ETCCONF_DIR "/etc/snakepit"

/* The directory: $SNAKEPIT_CONF_DIR, else /etc/snakepit. */
const char *etcconf_dir(void);
/* The value of option `name` in the first of mcp.conf, broker.conf, executor.conf that sets
 * it, into out; the file it came from into where. 1 when found; 0 when none sets it, with
 * err saying what was looked at (a file that exists but cannot be read is named, with the
 * reason: the files are root:snakepit 0640 because they may hold passwords). */
int etcconf_get(const char *name, char *out, size_t cap, char *where, size_t wherecap, char *err,
                size_t errlen);

#endif
