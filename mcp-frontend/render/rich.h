/* mcp-frontend/render/rich.h — execute_code's rich results: the outputs a job displayed
 * or its trailing expression gave, and the files it wrote, as structuredContent and as the matching
 * MCP content blocks.
 *
 *   structuredContent.outputs  [{kind: "display"|"result", index, mimeType, data, encoding?}]:
 *                              text as text, application/json as JSON, images base64
 *   structuredContent.files    [{path, bytes, encoding, content, uri?, note?}]: a file larger
 *                              than the link threshold has no content but a uri,
 *                              sandbox://executions/{id}/files/{path} (path percent-encoded),
 *                              which resources/read serves to the same tenant (filestore.h);
 *                              or, when the store's bounds did not let it be kept, a note
 *   content blocks             image for PNGs, text for a display()'s text/plain, an embedded
 *                              resource (sandbox://executions/{id}/outputs/{index}.{ext}) for
 *                              HTML, JSON, Markdown, LaTeX and SVG, a resource_link per linked
 *                              file
 * The text summary block is outcome.c's. */
#ifndef SP_FE_RICH_H
#define SP_FE_RICH_H
#include <jansson.h>

#include "common/buf.h"
#include "proto/result.h"

#define RICH_LINK_BYTES_DEFAULT (64u << 10)

/* Files larger than this come back as resource links (front-end option --file-link-bytes). */
void rich_set_link_bytes(size_t bytes);
/* 1 when f is returned as a link rather than inline. */
int rich_is_link(const result_file_t *f);

json_t *rich_outputs(const result_t *res);
json_t *rich_files(const char *id, const result_t *res);
/* Appends the outputs' and the linked files' content blocks to content (a JSON array). */
void rich_blocks(json_t *content, const char *id, const result_t *res);
/* Files too large to return inline that the store did not keep (filestore.h's bounds), added to
 * a rendered CallToolResult: each in structuredContent.files (when it has that list) with no
 * content and no uri but a note saying why, and one text block with the notes. unkept: a JSON
 * array of {path, bytes, note}. */
void rich_add_unkept(json_t *call_result, const json_t *unkept);

/* The resource URIs: "sandbox://executions/{id}/files/" + the percent-encoded path into out. */
void rich_file_uri(buf_t *out, const char *id, const char *path);
/* The path of a file URI's tail (percent-decoded) into out; -1 when malformed. */
int rich_uri_path(const char *tail, buf_t *out);
/* A file's media type from its name ("application/octet-stream" when unknown). */
const char *rich_mime_of(const char *path);

#endif
