/* common/curve_cert.c — see curve_cert.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "curve_cert.h"

#define CERT_MAX_BYTES 65536

int curve_key_ok(const char *s)
{
    uint8_t bin[32];
    return s && strlen(s) == CURVE_Z85_LEN && zmq_z85_decode(bin, s) != NULL;
}

/* `name = "value"` with name at the start (after indentation): copies value into out. */
static int s_field(const char *line, const char *name, char *out, size_t cap)
{
    while (*line == ' ' || *line == '\t') line++;
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0) return 0;
    line += n;
    while (*line == ' ' || *line == '\t') line++;
    if (*line++ != '=') return 0;
    while (*line == ' ' || *line == '\t') line++;
    char quote = (*line == '"' || *line == '\'') ? *line++ : 0;
    size_t len = quote ? strcspn(line, quote == '"' ? "\"" : "'") : strcspn(line, " \t\r\n#");
    if (len >= cap) return -1;
    memcpy(out, line, len);
    out[len] = '\0';
    return 1;
}

int curve_cert_load(const char *path, curve_cert_t *cert, char *err, size_t errlen)
{
    memset(cert, 0, sizeof *cert);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    size_t total = 0;
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        total += strlen(line);
        if (total > CERT_MAX_BYTES) bad = 1;
        char *s = line;
        size_t len = strlen(s);
        while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
            s[--len] = '\0';
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || !*s) continue;
        /* A bare key first: Z85 has '=' in its alphabet, so a key could pass for a field. */
        if (strlen(s) == CURVE_Z85_LEN && curve_key_ok(s)) {
            if (!cert->public_key[0]) memcpy(cert->public_key, s, CURVE_Z85_LEN + 1);
        } else if (s_field(s, "public-key", cert->public_key, sizeof cert->public_key) < 0 ||
                   s_field(s, "secret-key", cert->secret_key, sizeof cert->secret_key) < 0 ||
                   s_field(s, "name", cert->name, sizeof cert->name) < 0) {
            bad = 1;
        }
    }
    fclose(f);
    const char *why = bad                    ? "not a certificate (line or file too long)"
                      : !cert->public_key[0] ? "no public-key in it"
                      : !curve_key_ok(cert->public_key) ? "public-key is not a 40-character Z85 key"
                      : cert->secret_key[0] && !curve_key_ok(cert->secret_key)
                          ? "secret-key is not a 40-character Z85 key"
                          : NULL;
    if (why) {
        snprintf(err, errlen, "%s: %s", path, why);
        memset(cert, 0, sizeof *cert);
        return -1;
    }
    return 0;
}

int curve_cert_save(const char *path, const curve_cert_t *cert, int secret, int overwrite,
                    char *err, size_t errlen)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);
    int fd = open(path, flags, secret ? 0600 : 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&now, &tm));
    fprintf(f, "#   ****  Generated on %s UTC by snakepit keygen  ****\n", when);
    if (secret)
        fprintf(f, "#   ZeroMQ CURVE **Secret** Certificate\n"
                   "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n\n");
    else
        fprintf(f, "#   ZeroMQ CURVE Public Certificate\n"
                   "#   Give it to the peers that must trust this key (the broker's allowlist\n"
                   "#   directory, --curve-allow-dir, for executors and front-ends).\n\n");
    fprintf(f, "metadata\n");
    if (cert->name[0]) fprintf(f, "    name = \"%s\"\n", cert->name);
    fprintf(f, "curve\n    public-key = \"%s\"\n", cert->public_key);
    if (secret) fprintf(f, "    secret-key = \"%s\"\n", cert->secret_key);
    int rc = fflush(f) == 0 && fsync(fd) == 0 ? 0 : -1;
    if (rc < 0) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

int curve_key_resolve(const char *arg, char out[CURVE_Z85_LEN + 1], char *err, size_t errlen)
{
    if (curve_key_ok(arg) && access(arg, F_OK) != 0) {
        snprintf(out, CURVE_Z85_LEN + 1, "%s", arg);
        return 0;
    }
    curve_cert_t cert;
    if (curve_cert_load(arg, &cert, err, errlen) < 0) return -1;
    snprintf(out, CURVE_Z85_LEN + 1, "%s", cert.public_key);
    return 0;
}
