/* broker/zap.c — see zap.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curve_cert.h"
#include "common/log.h"
#include "broker/tables/keymap.h"
#include "zap.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_MAX_KEYS 100000
#define ZAP_FRAMES   7 /* version, request id, domain, address, identity, mechanism, key */

struct zap {
    void *sock; /* REP at ZAP_ENDPOINT */
    loop_t *loop;
    char *dir;
    keymap_t *allowed; /* 32-byte public key → key name (owned string) */
    uint64_t n_allowed, n_denied;
    uint64_t log_window_ms; /* denials are logged at most 10 a second */
    unsigned log_count;
};

static void s_free_name(void *arg, const void *key, size_t len, void *value)
{
    (void)arg, (void)key, (void)len;
    free(value);
}

static void s_free_keys(keymap_t **m)
{
    if (!*m) return;
    keymap_each(*m, s_free_name, NULL);
    keymap_destroy(m);
}

static int s_load_dir(const char *dir, keymap_t **out, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "--curve-allow-dir %s: %s", dir, strerror(errno));
        return -1;
    }
    keymap_t *m = keymap_new();
    struct dirent *e;
    while ((e = readdir(d)) && keymap_size(m) < ZAP_MAX_KEYS) {
        size_t n = strlen(e->d_name);
        /* Public certificates only: a *_secret file has no business in an allowlist. */
        if (e->d_name[0] == '.' || n < 5 || strcmp(e->d_name + n - 4, ".key") != 0) continue;
        char path[4096], why[512];
        curve_cert_t cert;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (curve_cert_load(path, &cert, why, sizeof why) < 0) {
            log_warn("event=allowlist_skip file=%s error=\"%s\"", e->d_name, why);
            continue;
        }
        uint8_t bin[32];
        zmq_z85_decode(bin, cert.public_key);
        char *name = cert.name[0] ? xstrdup(cert.name) : xstrndup(e->d_name, n - 4);
        if (keymap_put(m, bin, sizeof bin, name) < 0) free(name); /* the same key twice */
    }
    closedir(d);
    *out = m;
    return 0;
}

int zap_reload(zap_t *self, char *err, size_t errlen)
{
    keymap_t *m;
    if (s_load_dir(self->dir, &m, err, errlen) < 0) return -1;
    s_free_keys(&self->allowed);
    self->allowed = m;
    log_info("event=allowlist_loaded dir=%s keys=%zu", self->dir, keymap_size(m));
    return 0;
}

static void s_reply(zap_t *self, const zmq_msg_t *req_id, const char *code, const char *text,
                    const char *user)
{
    zmq_send(self->sock, "1.0", 3, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(self->sock, req_id ? zmq_msg_data((zmq_msg_t *)req_id) : "",
             req_id ? zmq_msg_size((zmq_msg_t *)req_id) : 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(self->sock, code, strlen(code), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(self->sock, text, strlen(text), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(self->sock, user, strlen(user), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(self->sock, "", 0, ZMQ_DONTWAIT);
}

static void s_deny_log(zap_t *self, const char *address, const char *why)
{
    uint64_t now = clock_mono_ms();
    if (now - self->log_window_ms >= 1000) self->log_window_ms = now, self->log_count = 0;
    if (self->log_count++ < 10)
        log_warn("event=auth_denied address=%s reason=\"%s\" denied_total=%llu", address, why,
                 (unsigned long long)self->n_denied);
}

/* One request: read every part (REP must answer each request exactly once, malformed or
 * not, or it stops reading), then judge. */
static void s_handle(zap_t *self)
{
    zmq_msg_t parts[ZAP_FRAMES];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t scratch, *m = n < ZAP_FRAMES ? &parts[n] : &scratch;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, self->sock, n ? 0 : ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(m);
            for (int i = 0; i < (n < ZAP_FRAMES ? n : ZAP_FRAMES); i++) zmq_msg_close(&parts[i]);
            return;
        }
        more = zmq_msg_more(m);
        if (m == &scratch) zmq_msg_close(m);
        n++;
    }
    char address[64] = "?";
    if (n >= 4)
        snprintf(address, sizeof address, "%.*s", (int)zmq_msg_size(&parts[3]),
                 (const char *)zmq_msg_data(&parts[3]));
    if (n != ZAP_FRAMES || zmq_msg_size(&parts[0]) != 3 ||
        memcmp(zmq_msg_data(&parts[0]), "1.0", 3)) {
        self->n_denied++;
        s_deny_log(self, address, "malformed ZAP request");
        s_reply(self, n >= 2 ? &parts[1] : NULL, "500", "malformed request", "");
    } else if (zmq_msg_size(&parts[5]) != 5 || memcmp(zmq_msg_data(&parts[5]), "CURVE", 5) ||
               zmq_msg_size(&parts[6]) != 32) {
        self->n_denied++;
        s_deny_log(self, address, "not CURVE");
        s_reply(self, &parts[1], "400", "CURVE required", "");
    } else {
        const char *name = keymap_get(self->allowed, zmq_msg_data(&parts[6]), 32);
        if (name) {
            self->n_allowed++;
            log_debug("event=auth_allowed address=%s key=%s", address, name);
            s_reply(self, &parts[1], "200", "OK", name);
        } else {
            char z85[CURVE_Z85_LEN + 1];
            zmq_z85_encode(z85, zmq_msg_data(&parts[6]), 32);
            self->n_denied++;
            char why[96];
            snprintf(why, sizeof why, "public key %s is not in the allowlist", z85);
            s_deny_log(self, address, why);
            s_reply(self, &parts[1], "400", "unknown key", "");
        }
    }
    for (int i = 0; i < (n < ZAP_FRAMES ? n : ZAP_FRAMES); i++) zmq_msg_close(&parts[i]);
}

static void s_on_request(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    zap_t *self = arg;
    for (int budget = 0; budget < 100; budget++) {
        int events = 0;
        size_t len = sizeof events;
        if (zmq_getsockopt(self->sock, ZMQ_EVENTS, &events, &len) < 0 || !(events & ZMQ_POLLIN))
            break;
        s_handle(self);
    }
}

zap_t *zap_new(void *ctx, loop_t *loop, const char *allow_dir, char *err, size_t errlen)
{
    zap_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->dir = xstrdup(allow_dir);
    if (zap_reload(self, err, errlen) < 0) {
        zap_destroy(&self);
        return NULL;
    }
    self->sock = zmq_socket(ctx, ZMQ_REP);
    int linger = 0;
    zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(self->sock, ZAP_ENDPOINT) < 0) {
        snprintf(err, errlen, "ZAP handler: bind %s: %s", ZAP_ENDPOINT, zmq_strerror(errno));
        zap_destroy(&self);
        return NULL;
    }
    loop_add_socket(loop, self->sock, ZMQ_POLLIN, s_on_request, self);
    return self;
}

void zap_destroy(zap_t **self_p)
{
    assert(self_p);
    zap_t *self = *self_p;
    if (!self) return;
    if (self->sock) {
        loop_remove_socket(self->loop, self->sock);
        zmq_close(self->sock);
    }
    s_free_keys(&self->allowed);
    free(self->dir);
    free(self);
    *self_p = NULL;
}

size_t zap_keys(const zap_t *self)
{
    return self->allowed ? keymap_size(self->allowed) : 0;
}

uint64_t zap_allowed(const zap_t *self)
{
    return self->n_allowed;
}

uint64_t zap_denied(const zap_t *self)
{
    return self->n_denied;
}
