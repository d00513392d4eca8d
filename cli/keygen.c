/* cli/keygen.c — see keygen.h. The pair comes from zmq_curve_keypair (libsodium under libzmq);
 * the secret file is created 0600 and never overwritten unless --force says so, because
 * silently replacing a key locks every peer that trusted the old one out. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/curve_cert.h"
#include "proto/wire.h"
#include "keygen.h"

typedef struct {
    char dir[1024];
    int force;
} keygen_conf_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(keygen_conf_t, dir, "dir", "DIR", "where to write NAME.key and NAME.key_secret"),
    CFG_OPT_BOOL(keygen_conf_t, force, "force", "overwrite existing files"),
    CFG_OPT_END,
};

static const char *s_summary =
    "Writes a CURVE key pair: DIR/NAME.key (the public certificate: copy it into the\n"
    "broker's --curve-allow-dir, or give the broker's to its peers) and DIR/NAME.key_secret\n"
    "(mode 0600: stays on this machine; pass it as --curve-secret-file). Prints the public key.";

int keygen_main(int argc, char **argv)
{
    keygen_conf_t conf = {.dir = "."}, defaults = conf;
    char *rest[2];
    int n_rest = 2;
    char err[512];
    switch (config_load(&conf, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit keygen [--dir DIR] [--force] NAME", s_summary, s_opts,
                     &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit keygen: %s\n", err);
        return 64;
    case CONFIG_OK:
        break;
    }
    if (n_rest != 1) {
        fprintf(stderr, "snakepit keygen: give exactly one NAME (see --help)\n");
        return 64;
    }
    const char *name = rest[0];
    if (!wire_name_ok(name, strlen(name))) {
        fprintf(stderr, "snakepit keygen: NAME must be 1-64 of [A-Za-z0-9._-]\n");
        return 64;
    }
    if (!zmq_has("curve")) {
        fprintf(stderr, "snakepit keygen: this libzmq was built without CURVE\n");
        return 1;
    }
    if (mkdir(conf.dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "snakepit keygen: %s: %s\n", conf.dir, strerror(errno));
        return 1;
    }
    curve_cert_t cert = {0};
    snprintf(cert.name, sizeof cert.name, "%s", name);
    if (zmq_curve_keypair(cert.public_key, cert.secret_key) < 0) {
        fprintf(stderr, "snakepit keygen: zmq_curve_keypair: %s\n", zmq_strerror(errno));
        return 1;
    }
    char pub_path[1200], sec_path[1200];
    snprintf(pub_path, sizeof pub_path, "%s/%s.key", conf.dir, name);
    snprintf(sec_path, sizeof sec_path, "%s/%s.key_secret", conf.dir, name);
    /* The secret first: if it cannot be written, no orphan public key is left to trust. */
    if (curve_cert_save(sec_path, &cert, 1, conf.force, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit keygen: %s%s\n", err,
                errno == EEXIST ? " (exists; --force replaces it)" : "");
        explicit_bzero(&cert, sizeof cert);
        return 1;
    }
    if (curve_cert_save(pub_path, &cert, 0, conf.force, err, sizeof err) < 0) {
        int e = errno;
        unlink(sec_path); /* a secret without its public half would only mislead */
        fprintf(stderr, "snakepit keygen: %s%s\n", err,
                e == EEXIST ? " (exists; --force replaces it)" : "");
        explicit_bzero(&cert, sizeof cert);
        return 1;
    }
    fprintf(stderr, "snakepit keygen: wrote %s (public) and %s (secret, 0600)\n", pub_path,
            sec_path);
    printf("%s\n", cert.public_key);
    explicit_bzero(&cert, sizeof cert);
    return 0;
}
