/* executor-node/egress/head.h — the head of an HTTP/1.x request a sandboxed job sends its proxy
 * (RFC 9112 §3, RFC 9110 §9.3.6): `CONNECT host:port` for a tunnel (HTTPS, or any TCP the
 * runner tunnels), or an absolute-form request (`GET http://host[:port]/path`) for plain HTTP.
 *
 * Hostile input: the bytes come from tenants' code. The parser reads only what it is given,
 * caps every part, accepts CRLF line ends only (no bare CR or LF, no NUL, no obsolete line
 * folding: a line that a server would read differently from us is refused, not guessed), and
 * allocates nothing: what it returns points into the caller's buffer. A head that does not
 * parse ends that connection with 400 and nothing else. */
#ifndef SP_EGRESS_HEAD_H
#define SP_EGRESS_HEAD_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define HEAD_MAX         16384 /* bytes of a request head, its final empty line included */
#define HEAD_MAX_HEADERS 100
#define HEAD_SECRET_MAX  64

typedef enum { HEAD_CONNECT = 1, HEAD_FORWARD } head_kind_t;

typedef struct {
    const char *p;
    size_t len;
} head_span_t;

typedef struct {
    head_kind_t kind;
    head_span_t method;          /* "CONNECT", "GET", ... */
    char host[254];              /* the target's host: a name (lower case) or an address
                                    literal (IPv6 without brackets) */
    int host_is_addr;            /* host is an address literal */
    int port;                    /* 1-65535 (80 when an http:// URI names none) */
    head_span_t path;            /* HEAD_FORWARD: origin-form, "/" at least */
    int minor;                   /* HTTP/1.minor */
    char secret[HEAD_SECRET_MAX + 1]; /* the password of Proxy-Authorization: Basic; "" none */
    size_t head_len;             /* bytes of the head, its empty line included */
    struct {
        head_span_t name, value;
    } headers[HEAD_MAX_HEADERS];
    size_t n_headers;
} head_t;

typedef enum {
    HEAD_OK = 0,
    HEAD_PARTIAL = 1, /* no complete head yet: read more (while under HEAD_MAX) */
    HEAD_BAD = -1,    /* malformed: answer 400 and close */
} head_rc_t;

/* Parses the head at the start of buf[0..len). HEAD_OK fills h (h->head_len says where the
 * body begins); HEAD_BAD says why in err. */
head_rc_t head_parse(const char *buf, size_t len, head_t *h, char *err, size_t errlen);
/* HEAD_FORWARD: the request as the origin server gets it: origin-form, Host set to the
 * target, the proxy's own headers (Proxy-Authorization, Proxy-Connection) and the hop-by-hop
 * ones dropped, and `Connection: close`, one request per connection. */
void head_forward(const head_t *h, buf_t *out);

#endif
