/* common/redis_url.h — where Redis is: `redis://[user:password@]host:port[/db]` or
 * `unix:///path/to/redis.sock[?db=N]` (and `unix:/path`), as `snakepit up --redis` and every
 * component's --redis take it. */
#ifndef SP_REDIS_URL_H
#define SP_REDIS_URL_H
#include <stddef.h>

typedef struct {
    char host[256];     /* empty for unix sockets */
    int  port;
    char path[256];     /* unix socket path, empty for TCP */
    char user[128];
    char password[256];
    int  db;
} redis_url_t;

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen); /* 0 / -1 */
/* Formats back without the password, for logs. */
void redis_url_describe(const redis_url_t *u, char *out, size_t cap);

#endif
