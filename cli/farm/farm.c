/* cli/farm/farm.c — see farm.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/redis_dial.h"
#include "common/redis_url.h"
#include "etcconf.h"
#include "farm.h"

void farm_state_dir(const char *given, char *out, size_t cap)
{
    const char *env = getenv("SNAKEPIT_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME"),
               *home = getenv("HOME");
    if (given && *given)
        snprintf(out, cap, "%s", given);
    else if (env && *env)
        snprintf(out, cap, "%s", env);
    else if (xdg && *xdg)
        snprintf(out, cap, "%s/snakepit", xdg);
    else if (home && *home)
        snprintf(out, cap, "%s/.local/state/snakepit", home);
    else
        snprintf(out, cap, "/tmp/snakepit-%d", (int)getuid());
}

static void s_copy(json_t *o, const char *key, char *out, size_t cap)
{
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(out, cap, "%s", v ? v : "");
}

int farm_read_ready(const char *state_dir, farm_info_t *out, char *err, size_t errlen)
{
    char path[PATH_MAX + 16];
    memset(out, 0, sizeof *out);
    snprintf(out->state_dir, sizeof out->state_dir, "%s", state_dir);
    snprintf(path, sizeof path, "%s/ready.json", state_dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) {
        snprintf(err, errlen, "no running farm in %s (%s); start one with `snakepit up`", state_dir,
                 je.text);
        return -1;
    }
    s_copy(o, "url", out->url, sizeof out->url);
    s_copy(o, "api_key", out->api_key, sizeof out->api_key);
    s_copy(o, "remote_url", out->remote_url, sizeof out->remote_url);
    s_copy(o, "ca_file", out->ca_file, sizeof out->ca_file);
    s_copy(o, "redis", out->redis, sizeof out->redis);
    s_copy(o, "broker", out->broker, sizeof out->broker);
    s_copy(o, "executors", out->executors, sizeof out->executors);
    s_copy(o, "brokers", out->brokers, sizeof out->brokers);
    s_copy(o, "executor_endpoints", out->executors_all, sizeof out->executors_all);
    if (!out->brokers[0]) snprintf(out->brokers, sizeof out->brokers, "%s", out->broker);
    if (!out->executors_all[0])
        snprintf(out->executors_all, sizeof out->executors_all, "%s", out->executors);
    json_t *metrics = json_object_get(o, "metrics");
    for (size_t i = 0; i < FARM_METRICS; i++) {
        const char *url = json_string_value(json_array_get(metrics, i));
        snprintf(out->metrics[i], sizeof out->metrics[i], "%s", url ? url : "");
    }
    const char *cmd = json_string_value(json_array_get(json_object_get(o, "stdio_command"), 0));
    snprintf(out->snakepit, sizeof out->snakepit, "%s", cmd ? cmd : "");
    out->pid = (long)json_integer_value(json_object_get(o, "pid"));
    json_t *curve = json_object_get(o, "curve");
    s_copy(curve, "broker_key", out->curve_broker_key, sizeof out->curve_broker_key);
    s_copy(curve, "client_cert", out->curve_client_cert, sizeof out->curve_client_cert);
    json_decref(o);
    return 0;
}

int farm_write_ready(const farm_info_t *info)
{
    json_t *metrics = json_array();
    for (size_t i = 0; i < FARM_METRICS; i++)
        if (i < FARM_METRICS_BROKER2 || info->metrics[i][0])
            json_array_append_new(metrics, json_string(info->metrics[i]));
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:[s,s,s,s,s]}", "url",
                          info->url, "api_key", info->api_key, "redis", info->redis, "broker",
                          info->broker, "executors", info->executors, "state_dir", info->state_dir,
                          "pid", (json_int_t)info->pid, "metrics", metrics, "stdio_command",
                          info->snakepit, "mcp", "--stdio", "--state-dir", info->state_dir);
    json_object_set_new(o, "brokers", json_string(info->brokers));
    json_object_set_new(o, "executor_endpoints", json_string(info->executors_all));
    if (info->remote_url[0]) json_object_set_new(o, "remote_url", json_string(info->remote_url));
    if (info->ca_file[0]) json_object_set_new(o, "ca_file", json_string(info->ca_file));
    if (info->curve_broker_key[0])
        json_object_set_new(o, "curve",
                            json_pack("{s:s, s:s}", "broker_key", info->curve_broker_key,
                                      "client_cert", info->curve_client_cert));
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ready.json", info->state_dir);
    snprintf(tmp, sizeof tmp, "%s/ready.json.tmp", info->state_dir);
    int rc = json_dump_file(o, tmp, JSON_INDENT(2)) == 0 && chmod(tmp, 0600) == 0 &&
                     rename(tmp, path) == 0
                 ? 0
                 : -1;
    json_decref(o);
    return rc;
}

int farm_alive(const farm_info_t *info)
{
    return info->pid > 0 && (kill((pid_t)info->pid, 0) == 0 || errno == EPERM);
}

int farm_read_running(const char *state_dir, farm_info_t *out, char *err, size_t errlen)
{
    if (farm_read_ready(state_dir, out, err, errlen) < 0) return -1;
    if (!out->pid || farm_alive(out)) return 0;
    snprintf(err, errlen,
             "the farm in %s is not running (its ready.json is left from a `snakepit up` that "
             "stopped, pid %ld); start it with `snakepit up`",
             state_dir, out->pid);
    return -1;
}

redisContext *farm_redis(const char *url, char *err, size_t errlen)
{
    return farm_redis_ms(url, 2000, err, errlen);
}

redisContext *farm_redis_ms(const char *url, long timeout_ms, char *err, size_t errlen)
{
    redis_url_t u;
    if (redis_url_parse(url, &u, err, errlen) < 0) return NULL;
    return redis_dial_blocking(&u, timeout_ms, err, errlen);
}

void farm_bin_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, cap, ".");
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(out, cap, "%s", exe);
}

/* The Redis URL of the farm a command means when it names none: the state directory's farm
 * when one was named (--state-dir, $SNAKEPIT_STATE_DIR) or the default one has a ready.json;
 * else the installed farm's (/etc/snakepit, etcconf.h). 0, or -1 with every place looked at
 * in err. */
static int s_redis_of_farm(const char *state_dir, char *url, size_t cap, char *err, size_t errlen)
{
    char dir[PATH_MAX], why[PATH_MAX + 128], conf_err[PATH_MAX + 160], where[PATH_MAX];
    farm_info_t info;
    int named = state_dir && state_dir[0];
    farm_state_dir(named ? state_dir : NULL, dir, sizeof dir);
    /* the default state directory counts only with its farm running: a ready.json left by a
     * killed `snakepit up` must not hide the installed farm */
    if (farm_read_ready(dir, &info, why, sizeof why) == 0 && (named || farm_alive(&info))) {
        snprintf(url, cap, "%s", info.redis);
        return 0;
    }
    if (!named && info.pid && !farm_alive(&info))
        snprintf(why, sizeof why, "the farm of %s is not running", dir);
    if (named) {
        snprintf(err, errlen, "%s (or pass --redis URL)", why);
        return -1;
    }
    if (etcconf_get("redis", url, cap, where, sizeof where, conf_err, sizeof conf_err) > 0)
        return 0;
    snprintf(err, errlen, "%s; %s; pass --redis URL", why, conf_err);
    return -1;
}

redisContext *farm_connect(const char *cmd, const char *state_dir, char *redis_url, size_t cap)
{
    char err[3 * PATH_MAX];
    if (!redis_url[0] && s_redis_of_farm(state_dir, redis_url, cap, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return NULL;
    }
    redisContext *c = farm_redis(redis_url, err, sizeof err);
    char dir[PATH_MAX], scratch[PATH_MAX + 128];
    farm_info_t info;
    farm_state_dir(state_dir && state_dir[0] ? state_dir : NULL, dir, sizeof dir);
    /* a farm that stopped takes its private Redis with it: say that, not why the socket failed */
    if (!c && farm_read_ready(dir, &info, scratch, sizeof scratch) == 0 &&
        !strcmp(info.redis, redis_url))
        farm_read_running(dir, &info, err, sizeof err);
    if (!c) fprintf(stderr, "%s: %s\n", cmd, err);
    return c;
}

int farm_scan(redisContext *c, const char *match, farm_page_fn page, void *ctx, char *err,
              size_t errlen)
{
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, match);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(err, errlen, "redis SCAN: %s",
                     r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
            if (r) freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        int rc = page(c, r->element[1], ctx, err, errlen);
        freeReplyObject(r);
        if (rc < 0) return -1;
        if (rc > 0) break;
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

int farm_replicated(redisContext *c, char *err, size_t errlen)
{
    redisReply *r = redisCommand(c, "INFO replication");
    long replicas = 0;
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_slaves:") : NULL;
    if (p) replicas = atol(p + strlen("connected_slaves:"));
    if (r) freeReplyObject(r);
    if (replicas <= 0) return 0;
    r = redisCommand(c, "WAIT %ld %d", replicas, FARM_WAIT_MS);
    long acked = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
    if (r) freeReplyObject(r);
    if (acked > 0) return 0;
    snprintf(err, errlen,
             "no replica confirmed the change within %d ms: a failover now could lose it",
             FARM_WAIT_MS);
    return -1;
}
