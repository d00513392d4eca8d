/* cli/farm/farm.h — what the CLI knows about a farm: where its state directory is, what
 * `snakepit up` writes to ready.json (and every other command reads), and how to reach its
 * Redis. */
#ifndef SP_FARM_H
#define SP_FARM_H
#include <hiredis/hiredis.h>
#include <linux/limits.h>
#include <stddef.h>

/* the /metrics URLs in ready.json's "metrics", in this order (the second broker's only with
 * `snakepit up --brokers 2`) */
enum {
    FARM_METRICS_BROKER,
    FARM_METRICS_EXECUTOR,
    FARM_METRICS_MCP,
    FARM_METRICS_BROKER2,
    FARM_METRICS
};

/* What `snakepit up` keeps in the state directory for `snakepit down`: the lock it holds while
 * it runs (its pid inside), and the components it runs ("NAME PID" lines). */
#define FARM_LOCK_FILE "up.lock"
#define FARM_PIDS_FILE "up.pids"

/* ready.json, field by field. */
typedef struct {
    char state_dir[PATH_MAX];
    char url[256];     /* MCP endpoint, as this machine reaches it */
    char remote_url[320]; /* as other machines do, when it listens on every address; or "" */
    char ca_file[PATH_MAX]; /* the certificate an https endpoint serves: local clients trust it */
    char api_key[128]; /* the local tenant's key */
    char redis[PATH_MAX + 64];
    char broker[PATH_MAX + 64];       /* client endpoint (the first broker's) */
    char executors[PATH_MAX + 64];    /* executor endpoint (the first broker's) */
    char brokers[2 * PATH_MAX + 130]; /* every broker's client endpoint, comma-separated */
    char executors_all[2 * PATH_MAX + 130]; /* every broker's executor endpoint, likewise */
    char metrics[FARM_METRICS][160];  /* the /metrics URLs of broker, executor, front-end */
    char snakepit[PATH_MAX + 16];     /* this command, for a stdio client's configuration */
    long pid;                         /* of `snakepit up` */
    char curve_broker_key[PATH_MAX];  /* set when the farm's broker speaks CURVE */
    char curve_client_cert[PATH_MAX]; /* this machine's client key pair for it */
} farm_info_t;

/* The state directory: the one given, else $SNAKEPIT_STATE_DIR, else $XDG_STATE_HOME/snakepit,
 * else ~/.local/state/snakepit. */
void farm_state_dir(const char *given, char *out, size_t cap);
int farm_read_ready(const char *state_dir, farm_info_t *out, char *err, size_t errlen);
/* Writes STATE_DIR/ready.json (mode 0600: it holds the key) whole or not at all, through a
 * rename. 0, or -1 with errno set. */
int farm_write_ready(const farm_info_t *info);
/* 1 when ready.json names a live `snakepit up`. */
int farm_alive(const farm_info_t *info);
/* farm_read_ready, and -1 too when the `snakepit up` that wrote ready.json is gone (a farm that
 * was killed, or a machine that rebooted, leaves its ready.json behind): err then says that the
 * farm is not running rather than what connecting to its dead endpoints would. */
int farm_read_running(const char *state_dir, farm_info_t *out, char *err, size_t errlen);
/* A blocking connection with a timeout, authenticated and on the right db; for a
 * redis-sentinel:// URL, to the master the sentinels name (common/redis_dial.h). */
redisContext *farm_redis(const char *url, char *err, size_t errlen);
/* The same with another timeout (for checks that must not hold a loop up). */
redisContext *farm_redis_ms(const char *url, long timeout_ms, char *err, size_t errlen);
/* The Redis of the farm a command talks to: redis_url when given (--redis, $SNAKEPIT_REDIS);
 * else the one in the ready.json of the state directory named (--state-dir,
 * $SNAKEPIT_STATE_DIR), or of the default one when it has a farm; else the `redis` of the
 * installed farm's /etc/snakepit files (etcconf.h). The URL used is written back into
 * redis_url. Says why on stderr, prefixed with the command's name, when it cannot. */
redisContext *farm_connect(const char *cmd, const char *state_dir, char *redis_url, size_t cap);
/* After a change that must outlive a failover (a tenant, a key): when the Redis has replicas,
 * waits up to FARM_WAIT_MS for one to confirm it (WAIT). 0, or -1 with err when none did. */
#define FARM_WAIT_MS 2000
int farm_replicated(redisContext *c, char *err, size_t errlen);
/* Walks every key matching `match` with SCAN (never KEYS: the farm's Redis holds every
 * execution record), handing each page's key array to `page`. `page` returns <0 on error
 * (having written err), >0 to stop early, 0 for more. */
typedef int (*farm_page_fn)(redisContext *c, redisReply *keys, void *ctx, char *err, size_t errlen);
int farm_scan(redisContext *c, const char *match, farm_page_fn page, void *ctx, char *err,
              size_t errlen);
/* Directory holding this binary (siblings: snakepit-broker, ...). */
void farm_bin_dir(char *out, size_t cap);

#endif
