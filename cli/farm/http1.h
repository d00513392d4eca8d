/* cli/farm/http1.h — one HTTP/1.1 request per connection (Connection: close), blocking, with a
 * deadline, over plain TCP or TLS (tls.h): what the CLI's MCP client needs and no more. The
 * answer is read to the end of the connection (bounded), its head kept for header lookups; a
 * chunked body is decoded, and one shorter than its Content-Length refused. */
#ifndef SP_HTTP1_H
#define SP_HTTP1_H
#include <stddef.h>

#include "common/buf.h"

typedef struct {
    char host[256]; /* a name, an IPv4 address, or an IPv6 address without its brackets */
    int port;
    char path[512];
    int tls;            /* https:// */
    char ca_file[4096]; /* with tls: the CAs to trust instead of the system's (PEM); "" none */
} http1_url_t;

typedef struct {
    int status;
    buf_t head; /* the status line and header lines, NUL-terminated */
    buf_t body;
} http1_answer_t;

/* http[s]://HOST[:PORT][/PATH] (port 80 or 443, path "/" when left out; ca_file empty). 0,
 * or -1 with the reason. */
int http1_parse_url(const char *url, http1_url_t *u, char *err, size_t errlen);
/* Sends `method path` with the given extra header lines (each ending in \r\n; may be NULL)
 * and body (may be NULL), and reads the answer within timeout_ms. 0 with ans filled (free it
 * with http1_answer_free), or -1 with the reason in err: no connection, no complete answer in
 * time, or an answer that is not HTTP. */
int http1_exchange(const http1_url_t *u, const char *method, const char *headers, const char *body,
                   size_t body_len, long timeout_ms, http1_answer_t *ans, char *err, size_t errlen);
/* The value of a header of the answer (case-insensitive name) copied into out, or NULL. */
const char *http1_header(const http1_answer_t *ans, const char *name, char *out, size_t cap);
void http1_answer_free(http1_answer_t *ans);

#endif
