/* mcp-frontend/console/counts.h — what the console is configured with and what it counts: the
 * slice of the front-end's options it reads, sign-ins by outcome and refusals by reason (their
 * names are the metrics' labels). Below every file of the console, so each can count. */
#ifndef SP_FE_CONSOLE_COUNTS_H
#define SP_FE_CONSOLE_COUNTS_H
#include <stdint.h>

/* Sign-in attempts, by how they ended (snakepit_mcp_console_signins_total{outcome}). */
typedef enum {
    CONSOLE_SIGNIN_OK,
    CONSOLE_SIGNIN_INVALID,     /* no such key */
    CONSOLE_SIGNIN_MALFORMED,   /* no key in the form, or not a form */
    CONSOLE_SIGNIN_LIMITED,     /* the client address's attempts are over the rate */
    CONSOLE_SIGNIN_UNAVAILABLE, /* Redis could not be asked */
    CONSOLE_SIGNIN__COUNT
} console_signin_t;

/* Requests refused, by why (snakepit_mcp_console_refusals_total{reason}). */
typedef enum {
    CONSOLE_REFUSED_NOT_FOUND,
    CONSOLE_REFUSED_METHOD,
    CONSOLE_REFUSED_HOST,       /* Host not allowed (DNS rebinding) */
    CONSOLE_REFUSED_ORIGIN,     /* a state-changing request from another site */
    CONSOLE_REFUSED_SIGNED_OUT, /* no sign-in cookie, or one that is unknown or expired */
    CONSOLE_REFUSED_CSRF,       /* a state-changing request without the sign-in's token */
    CONSOLE_REFUSED_BODY,       /* too large, or not what the endpoint reads */
    CONSOLE_REFUSED_UNAVAILABLE,
    CONSOLE_REFUSED__COUNT
} console_refusal_t;

typedef struct {
    uint64_t signins[CONSOLE_SIGNIN__COUNT];
    uint64_t refused[CONSOLE_REFUSED__COUNT];
    uint64_t signouts;
    uint64_t key_rotations;
    uint64_t calls;  /* tool calls and resource reads made for pages */
    uint64_t assets; /* the page's files served */
} console_stats_t;

typedef struct {
    long idle_s;         /* a sign-in unused this long ends */
    long max_s;          /* and one ends this long after it was made, used or not */
    long signin_per_min; /* sign-in attempts per client address and minute (and the burst) */
} console_conf_t;

#define CONSOLE_CONF_DEFAULTS                                                                      \
    {                                                                                              \
        .idle_s = 1800, .max_s = 43200, .signin_per_min = 10                                       \
    }

const char *console_signin_name(console_signin_t outcome);
const char *console_refusal_name(console_refusal_t reason);

#endif
