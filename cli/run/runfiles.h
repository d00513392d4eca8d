/* cli/run/runfiles.h — the files that travel with a `snakepit run`: those it sends (--file-in,
 * into the job's workspace) and those it gets back (the figures and the files the code wrote),
 * which --out DIR saves. Both are lists of job_file_t, the JobSpec's own file type, so the
 * straight-to-the-broker path hands them over as they are.
 *
 * What comes back is written under DIR only by a path the executor's own rule allows
 * (jobspec_check_path: relative, no "..", no control characters), one component at a time,
 * never following a link: a farm is not trusted to choose where on this machine files go. */
#ifndef SP_RUNFILES_H
#define SP_RUNFILES_H
#include <jansson.h>
#include <stddef.h>

#include "proto/job.h"
#include "proto/result.h"

typedef struct {
    job_file_t *items;
    size_t n;
} runfiles_t;

void runfiles_add(runfiles_t *f, const char *path, const void *data, size_t len);
void runfiles_clear(runfiles_t *f);
/* Reads each PATH of a comma-separated list, named in the workspace by its base name. 0, or
 * -1 with the reason in err. */
int runfiles_read(runfiles_t *f, const char *paths, char *err, size_t errlen);
/* execute_code's `files` argument: {name: text} or {name: {content, encoding: "base64"}}. */
json_t *runfiles_argument(const runfiles_t *f);
/* [{path, bytes, encoding, content}], the shape of execute_code's structuredContent.files. */
json_t *runfiles_describe(const runfiles_t *f);
/* The figures (image content blocks, as figure-N.png) and the files (structuredContent.files)
 * of a CallToolResult. 0, or -1 with the reason when one cannot be decoded. */
int runfiles_from_tool_result(runfiles_t *figures, runfiles_t *files, json_t *call_result,
                              char *err, size_t errlen);
/* The same from a Result the broker answered. */
void runfiles_from_result(runfiles_t *figures, runfiles_t *files, const result_t *res);
/* Base64 (RFC 4648, padded) of data, for JSON; caller frees. */
char *runfiles_base64(const void *data, size_t len);
/* Writes each file under dir (created when missing), appending each path written to saved (a
 * JSON array). 0, or -1 with the reason in err at the first that cannot be written. */
int runfiles_save(const runfiles_t *f, const char *dir, json_t *saved, char *err, size_t errlen);

#endif
