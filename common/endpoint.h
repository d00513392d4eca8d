/* common/endpoint.h — where a ZeroMQ endpoint leads. Plain (unencrypted) ZeroMQ is for
 * connections that stay on the machine: the broker refuses to bind plain TCP anywhere else,
 * and `snakepit up` turns CURVE on when its executor endpoint is reachable from elsewhere.
 * Both ask this one rule, so they cannot disagree. */
#ifndef SP_ENDPOINT_H
#define SP_ENDPOINT_H

/* 1 for ipc://, inproc:// and TCP on a loopback address (127.*, localhost, [::1]). */
int endpoint_is_local(const char *endpoint);

#endif
