/* proto/status.h — the one status vocabulary, used in records, metrics and
 * MCP results alike. The numeric values are internal; on the wire and in Redis a status is
 * always its name. */
#ifndef SP_STATUS_H
#define SP_STATUS_H

typedef enum {
    ST_OK = 0,
    ST_ERROR,              /* the user's code raised */
    ST_SYNTAX_ERROR,
    ST_TIMEOUT,            /* wall-clock limit, or deadline passed while queued */
    ST_CPU_LIMIT,
    ST_MEMORY_LIMIT,
    ST_OUTPUT_LIMIT,
    ST_SECURITY_VIOLATION, /* seccomp trap or a blocked audit event */
    ST_CANCELLED,
    ST_REJECTED,           /* queue full, quota, no executor for the service */
    ST_LOST,               /* the executor died twice while running it */
    ST_INTERNAL_ERROR,
    ST_EGRESS_LIMIT,       /* stopped for going past its network byte cap (appended: the numbers
                              above are the CLI's exit statuses) */
    ST__COUNT
} status_t;

const char *status_name(status_t s);
int         status_parse(const char *name, status_t *out); /* 0, or -1 when unknown */
int         status_parse_n(const char *name, unsigned len, status_t *out);

#endif
