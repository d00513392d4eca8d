/* cli/farm/tls.c — see tls.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tls.h"

struct tls_conn {
    gnutls_session_t session;
    gnutls_certificate_credentials_t trust; /* the CAs the server's chain must lead to */
};

static int s_is_address(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* Why the server's certificate was refused, in GnuTLS's words. */
static void s_verify_error(gnutls_session_t s, char *err, size_t errlen)
{
    gnutls_datum_t why = {0};
    unsigned status = gnutls_session_get_verify_cert_status(s);
    if (gnutls_certificate_verification_status_print(status, gnutls_certificate_type_get(s), &why,
                                                     0) == 0) {
        size_t n = strlen((const char *)why.data);
        while (n && (why.data[n - 1] == ' ' || why.data[n - 1] == '\n')) n--;
        snprintf(err, errlen, "TLS: the server's certificate was refused: %.*s", (int)n,
                 (const char *)why.data);
        gnutls_free(why.data);
    } else {
        snprintf(err, errlen, "TLS: the server's certificate was refused");
    }
}

tls_conn_t *tls_connect(int fd, const char *host, const char *ca_file, long timeout_ms, char *err,
                        size_t errlen)
{
    tls_conn_t *self = xcalloc(1, sizeof *self);
    int rc = gnutls_certificate_allocate_credentials(&self->trust);
    if (rc == 0)
        rc = ca_file && *ca_file
                 ? gnutls_certificate_set_x509_trust_file(self->trust, ca_file, GNUTLS_X509_FMT_PEM)
                 : gnutls_certificate_set_x509_system_trust(self->trust);
    if (rc <= 0) { /* no CA at all would make every certificate fail: say why now */
        snprintf(err, errlen, "TLS: no trusted CA in %s%s%s",
                 ca_file && *ca_file ? ca_file : "the system's store", rc < 0 ? ": " : "",
                 rc < 0 ? gnutls_strerror(rc) : "");
        if (self->trust) gnutls_certificate_free_credentials(self->trust);
        free(self);
        return NULL;
    }
    gnutls_init(&self->session, GNUTLS_CLIENT);
    /* SNI names hosts, never addresses (RFC 6066 §3); the certificate is checked either way */
    if (!s_is_address(host))
        gnutls_server_name_set(self->session, GNUTLS_NAME_DNS, host, strlen(host));
    gnutls_set_default_priority(self->session);
    gnutls_credentials_set(self->session, GNUTLS_CRD_CERTIFICATE, self->trust);
    gnutls_session_set_verify_cert(self->session, host, 0);
    gnutls_transport_set_int(self->session, fd);
    gnutls_handshake_set_timeout(self->session, (unsigned)timeout_ms);
    do rc = gnutls_handshake(self->session);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    if (rc < 0) {
        if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)
            s_verify_error(self->session, err, errlen);
        else
            snprintf(err, errlen, "TLS handshake with %s: %s", host, gnutls_strerror(rc));
        gnutls_deinit(self->session);
        gnutls_certificate_free_credentials(self->trust);
        free(self);
        return NULL;
    }
    return self;
}

ssize_t tls_write(tls_conn_t *self, const void *data, size_t len)
{
    ssize_t n;
    do n = gnutls_record_send(self->session, data, len);
    while (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED);
    return n < 0 ? -1 : n;
}

ssize_t tls_read(tls_conn_t *self, void *data, size_t len)
{
    ssize_t n;
    do n = gnutls_record_recv(self->session, data, len);
    while (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED);
    /* a server that closes without close_notify has still sent a complete HTTP answer when
     * Connection: close frames it; the parser tells a cut one from a whole one */
    if (n == GNUTLS_E_PREMATURE_TERMINATION) return 0;
    return n < 0 ? -1 : n;
}

int tls_pending(const tls_conn_t *self)
{
    return gnutls_record_check_pending(self->session) > 0;
}

void tls_close(tls_conn_t **self_p)
{
    tls_conn_t *self = *self_p;
    if (!self) return;
    gnutls_bye(self->session, GNUTLS_SHUT_WR);
    gnutls_deinit(self->session);
    gnutls_certificate_free_credentials(self->trust);
    free(self);
    *self_p = NULL;
}
