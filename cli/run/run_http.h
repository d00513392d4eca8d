/* cli/run/run_http.h — `snakepit run` through a farm's MCP endpoint: execute_code (or
 * validate_code) called as any MCP client calls it, so the run is authenticated,
 * rate-limited and recorded like everyone else's. */
#ifndef SP_RUN_HTTP_H
#define SP_RUN_HTTP_H
#include "run_args.h"

/* Runs a's code at url with key; returns the exit status (run_args.h). */
int run_http(const run_args_t *a, const char *url, const char *key);

#endif
