/* mcp-frontend/render/outcome.h — a Result from the farm as an MCP CallToolResult. The shape of
 * execute_code's structuredContent is a contract and is declared, field for
 * field, in its outputSchema (tooldefs.c):
 *
 *   execution_id, status, stdout, stderr, truncated {stdout, stderr}, result (repr or null),
 *   variables {name: value}, error {type, message, traceback, line} or null,
 *   timings {queue_ms, wall_ms, cpu_ms}, resources {max_rss_kb}, exit {reason, signal, syscall}
 *
 * and: images [{mime, width, height, bytes}] (the PNGs themselves are `image`
 * content blocks), files [{path, bytes, encoding, content}] (what the code wrote in its
 * workspace: UTF-8 text as is, anything else base64), truncated.images / truncated.files;
 * exit.code (the code's own exit status: sys.exit(42) is 42) and security_events [{operation,
 * target, layer, count}]: what the sandbox refused, whether the code caught it (then the status
 * is the code's) or not (security_violation), truncated.security_events.
 *
 * Everything from the sandbox is bytes and is made valid UTF-8 here (U+FFFD for what is not). */
#ifndef SP_FE_OUTCOME_H
#define SP_FE_OUTCOME_H
#include <jansson.h>

#include "common/buf.h"
#include "proto/result.h"

/* A CallToolResult with one text block and the given structuredContent (stolen; may be NULL):
 * what every tool answers with. */
json_t *tool_result(const char *text, json_t *structured, int is_error);

/* res's security_events as a JSON array [{operation, target, layer, count}] (the record keeps
 * the same, records.c). */
json_t *outcome_security_events(const result_t *res);

/* execution.h's render functions: id is the execution id. */
json_t *outcome_execute(const char *id, const result_t *res);
json_t *outcome_validate(const char *id, const result_t *res);
/* The network destinations of a Result (its egress list) as structuredContent's `egress`. */
json_t *outcome_egress(const result_egress_list_t *l);

/* What the front-end decided about the call, added to its CallToolResult r (structuredContent
 * and, after the status line, the text): the profile it ran in and why (reason may be NULL),
 * and the limits it asked for beyond a maximum, lowered ({name: {requested, used, unit, why}},
 * or NULL), each as structuredContent.profile, profile_reason, limits_adjusted. */
void outcome_annotate(json_t *r, const char *profile, const char *reason, const json_t *adjusted);

#endif
