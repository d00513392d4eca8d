/* proto/result_json.h — a Result as the JSON object users see: the structuredContent of
 * execute_code, `snakepit run --json`, and execution records. One mapping, so the field names
 * are defined in one place:
 *   execution_id, status, stdout, stderr, truncated{stdout,stderr}, result, variables, error,
 *   timings{queue_ms,wall_ms,cpu_ms}, resources{max_rss_kb}, exit{reason,signal,syscall}
 * Output bytes become valid UTF-8 (invalid sequences, e.g. a multi-byte character cut by the
 * output limit, turn into U+FFFD). */
#ifndef SP_RESULT_JSON_H
#define SP_RESULT_JSON_H
#include <jansson.h>

#include "result.h"

json_t *result_to_json(const result_t *res, const char *execution_id);
/* Bytes → a JSON string of valid UTF-8, replacing what is not. */
json_t *json_utf8_string(const char *data, size_t len);

#endif
