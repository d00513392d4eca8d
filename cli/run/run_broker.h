/* cli/run/run_broker.h — `snakepit run --broker ENDPOINT`: the job submitted straight to a broker
 * as --tenant, the way the front-ends submit, without an MCP endpoint (and so without a
 * record, a rate limit or a tenant's quotas). CURVE when the farm's ready.json names keys. */
#ifndef SP_RUN_BROKER_H
#define SP_RUN_BROKER_H
#include "run_args.h"

/* curve_key: the broker's public key file, curve_cert: our key pair's; both "" for plain.
 * Returns the exit status (run_args.h). */
int run_broker(const run_args_t *a, const char *curve_key, const char *curve_cert);

#endif
