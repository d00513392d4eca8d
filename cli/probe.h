/* cli/probe.h — how `snakepit up` knows the farm is up before it says so: Redis answers PING,
 * the MCP endpoint answers GET /healthz with 200, one real job runs end to end through
 * broker, executor and sandbox, and the front-end knows which profiles are served. */
#ifndef SP_PROBE_H
#define SP_PROBE_H
#include <stddef.h>

#include "common/curve_cert.h"

/* 1 when the Redis at url answers PING. */
int probe_redis(const char *url);
/* 1 when GET /healthz on HOST:PORT answers 200 (0.0.0.0 or no host: 127.0.0.1). */
int probe_http(const char *host_port);
/* 1 when GET /healthz on HOST:PORT lists the profiles the farm serves: the front-end has read
 * what the executors report (its texts, and where calls without a profile run, follow that). */
int probe_served(const char *host_port);
/* 1 when HOST:PORT accepts a connection: an HTTPS endpoint, whose certificate may name
 * another host than the one probed (the probe job proves the farm works end to end). */
int probe_listening(const char *host_port);
/* Runs print('ready') as the tenant "local" in service, through the broker's client
 * endpoint (CURVE when broker_key is given, with the key pair mine). 0 when it came back
 * `ok`; PROBE_NOT_SERVED when the broker refused it (no executor serves the service yet: an
 * executor registers once its zygotes are warm); otherwise -1. Either way the status and its
 * message, or "no answer", in detail. */
#define PROBE_NOT_SERVED 1
int probe_job(const char *endpoint, const curve_cert_t *broker_key, const curve_cert_t *mine,
              const char *service, char *detail, size_t cap);

#endif
