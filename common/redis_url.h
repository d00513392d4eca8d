/* common/redis_url.h — where Redis is, as `snakepit up --redis` and every component's --redis
 * take it:
 *
 *   redis://[user:password@]host:port[/db]
 *   unix:///path/to/redis.sock[?db=N]                    (and unix:/path)
 *   redis-sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db]
 *
 * A Sentinel URL names no Redis server: it lists sentinels (port 26379 when none is given) and
 * the name of the master they watch; common/redis_dial.h asks them where the master is, and
 * asks again after a failover. The credentials are the master's; sentinels are asked without
 * any (Redis Sentinel's own default). */
#ifndef SP_REDIS_URL_H
#define SP_REDIS_URL_H
#include <stddef.h>

#define REDIS_URL_MAX_SENTINELS 8
#define REDIS_SENTINEL_PORT     26379

typedef struct {
    char host[256]; /* one sentinel */
    int port;
} redis_addr_t;

typedef struct {
    char host[256]; /* empty for unix sockets and Sentinel URLs */
    int port;
    char path[256]; /* unix socket path, empty for TCP */
    char user[128];
    char password[256];
    int db;
    char master[128]; /* Sentinel URLs: the master's name; empty otherwise */
    int n_sentinels;
    redis_addr_t sentinel[REDIS_URL_MAX_SENTINELS];
} redis_url_t;

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen); /* 0 / -1 */
/* Formats back without the password, for logs. */
void redis_url_describe(const redis_url_t *u, char *out, size_t cap);
/* 1 for a redis-sentinel:// URL. */
int redis_url_is_sentinel(const redis_url_t *u);
/* A host name in a redis:// URL resolved to its address, once, before a loop runs: hiredis
 * would resolve it, blocking the loop, at every reconnect (sentinels answer with addresses;
 * a unix socket has none). 0, or -1 with why. */
int redis_url_resolve(redis_url_t *u, char *err, size_t errlen);

#endif
