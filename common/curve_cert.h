/* common/curve_cert.h — CURVE key pairs on disk, in the ZPL certificate format CZMQ's zcert
 * writes, so keys made by `snakepit keygen`, by czmq tools or by hand all work:
 *
 *   metadata
 *       name = "executor-1"
 *   curve
 *       public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
 *       secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"   (NAME.key_secret only)
 *
 * `snakepit keygen NAME` writes NAME.key (public: give it to the broker's allowlist or to
 * peers) and NAME.key_secret (mode 0600: stays on the machine that owns it). A file that
 * holds nothing but a 40-character Z85 key is read as a public key. */
#ifndef SP_CURVE_CERT_H
#define SP_CURVE_CERT_H
#include <stddef.h>

#define CURVE_Z85_LEN 40

typedef struct {
    char name[65];                      /* metadata name, "" when absent */
    char public_key[CURVE_Z85_LEN + 1]; /* Z85 */
    char secret_key[CURVE_Z85_LEN + 1]; /* Z85, "" in a public certificate */
} curve_cert_t;

/* 0, or -1 with the reason in err (unreadable, no public key, a key that is not Z85). */
int curve_cert_load(const char *path, curve_cert_t *cert, char *err, size_t errlen);
/* Writes the public certificate, or with secret the secret one (created 0600, never over an
 * existing file unless overwrite). 0, or -1 with the reason in err. */
int curve_cert_save(const char *path, const curve_cert_t *cert, int secret, int overwrite,
                    char *err, size_t errlen);
/* 1 when s is 40 characters of Z85 that decode to 32 bytes. */
int curve_key_ok(const char *s);
/* A public key given on a command line: the key itself, or the path of a certificate. */
int curve_key_resolve(const char *arg, char out[CURVE_Z85_LEN + 1], char *err, size_t errlen);

#endif
