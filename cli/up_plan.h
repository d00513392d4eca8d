/* cli/up_plan.h — what `snakepit up` will run, worked out before anything starts: its
 * options (one table: flags, SNAKEPIT_* environment, --config file, --help), the defaults
 * that depend on this machine (free ports, the profiles whose libraries are installed), the
 * endpoints, the CURVE keys of a hub, and each component's command line. */
#ifndef SP_UP_PLAN_H
#define SP_UP_PLAN_H
#include <linux/limits.h>
#include <stddef.h>

#include "common/config.h"
#include "cli/farm/farm.h"
#include "hub.h"
#include "supervisor.h"

typedef struct {
    char http[128];
    char state_dir[PATH_MAX];
    long slots;
    long reserve_slots; /* the executor's --reserve-slots */
    char redis[PATH_MAX + 16];
    long redis_maxmemory_mb;
    char profiles[256];
    char executors[PATH_MAX + 16];
    long metrics_port;
    char port_range[32]; /* LO-HI: where ports left to the farm are picked (up_ports.h) */
    long brokers; /* how many brokers (1 or 2): executors and the front-end use every one */
    char disable_layer[128];
    char log_level[16];
    long ready_timeout_s;
    int http_asked;    /* --http given by name: used as given, not replaced when taken */
    int metrics_asked; /* --metrics-port likewise */
    char packages[PATH_MAX]; /* package source for jobs' dependencies (a wheel dir, an index) */
    int allow_remote;        /* plain HTTP on a non-loopback --http (a TLS proxy in front) */
    char tls_cert[PATH_MAX]; /* the front-end serves HTTPS with these (both or neither) */
    char tls_key[PATH_MAX];
    long log_max_kb; /* each component's log is rotated at this size (logpump.h) */
    long log_keep;   /* rotated logs kept per component */
    char egress_deny[2048];    /* more endpoints jobs may never reach (the farm's own are added) */
    char egress_resolver[128]; /* the executor's --egress-resolver */
} up_conf_t;

/* The children, in the order they start (UP_BROKER2 runs with --brokers 2 only). */
enum { UP_REDIS, UP_BROKER, UP_BROKER2, UP_EXECUTOR, UP_MCP, UP_CHILDREN };

typedef struct {
    up_conf_t conf;
    farm_info_t farm;  /* what ready.json will say; the API key comes once the tenant exists */
    int private_redis; /* no --redis: a redis-server of our own, on a socket in the state dir */
    int hub;           /* the executor endpoint is reachable from elsewhere: CURVE on */
    hub_keys_t keys;   /* when hub */
    child_t child[UP_CHILDREN];
} up_plan_t;

/* Reads the options into conf, the state directory resolved (farm_state_dir). On
 * CONFIG_HELP the usage is printed; on CONFIG_ERROR err says why — also for an --http address
 * other machines reach without TLS and without --allow-remote, refused here, before anything
 * starts, for the reason the front-end refuses it (API keys in the clear). */
config_rc_t up_options(up_conf_t *conf, int argc, char **argv, char *err, size_t errlen);
/* The rest of the plan from p->conf, once the state directory is ours (a hub's keys are kept
 * there). 0, or -1 with the reason in err. */
int up_plan(up_plan_t *p, char *err, size_t errlen);
/* Frees the command lines and wipes the keys. */
void up_plan_free(up_plan_t *p);

#endif
