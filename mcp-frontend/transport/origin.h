/* mcp-frontend/transport/origin.h — Origin and Host checks for the HTTP transport (see origin.c).
 */
#ifndef SP_FE_ORIGIN_H
#define SP_FE_ORIGIN_H

/* 1 when a request with this Origin header (NULL: none) may proceed. allow_list is a comma
 * list of exact origins ("*" allows any); empty allows only loopback origins. */
int http_origin_allowed(const char *origin, const char *allow_list);
/* 1 when the Host header is acceptable: loopback names on a loopback-bound server, plus the
 * allow list; any host on a non-loopback server without an allow list. */
int http_host_allowed(const char *host, const char *allow_list, int loopback_bound);

#endif
