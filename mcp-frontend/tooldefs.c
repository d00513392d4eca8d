/* mcp-frontend/tooldefs.c — the tools' descriptions and JSON Schemas (2020-12), as tools/list
 * publishes them. Kept as JSON text so that what clients see reads like what it is; parsed
 * once at start (a malformed literal here is a programming error and aborts). Parameter
 * names follow what users of the older sandbox servers already send (issue #5, seeds/). */
#include <assert.h>
#include <stdlib.h>

#include "tooldefs.h"

/* The JSON stays laid out as JSON. */
/* clang-format off */
static const char s_execute_code[] = "{"
  "\"name\": \"execute_code\","
  "\"title\": \"Run Python code\","
  "\"description\": \"Run Python 3.11 code in a fresh, isolated sandbox and return what it printed, "
    "the value of its last expression (or of a variable named `result`), any exception, and "
    "timings. Each call starts from a clean interpreter: no state survives between calls, and "
    "there is no network or subprocess access. Profiles (see get_sandbox_info): python.basic "
    "(default; safe standard library, no filesystem), python.filesystem (adds a private scratch "
    "directory), python.data_science (numpy, pandas, scipy, matplotlib, sympy, and the scratch "
    "directory). In the profiles with a scratch directory, `files` puts input files there "
    "(read them with relative paths, e.g. pd.read_csv('data.csv')), and files the code writes "
    "there come back in structuredContent.files. In python.data_science every matplotlib figure "
    "left open (or shown with plt.show()) comes back as a PNG image. A PEP 723 `# /// script` "
    "block with `dependencies` is checked against the profile's packages (without a `profile`, "
    "such a script runs in the first profile that has them all); nothing can be installed. Limits: timeout in seconds (default 30, 60 for data science), memory_limit in "
    "MB or as a string such as \\\"256m\\\". isError is true for every status other than ok.\","
  "\"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"code\"],"
    "\"properties\": {"
      "\"code\": {\"type\": \"string\", \"description\": \"Python source to run\", \"maxLength\": 1048576},"
      "\"timeout\": {\"type\": \"number\", \"exclusiveMinimum\": 0, \"description\": \"Wall-clock limit in seconds (default 30; capped by your plan and the profile)\"},"
      "\"memory_limit\": {\"type\": [\"integer\", \"string\"], \"description\": \"Memory limit: MB as an integer, or a string like \\\"256m\\\" or \\\"1g\\\"\"},"
      "\"profile\": {\"type\": \"string\", \"description\": \"Sandbox profile: python.basic (default), python.filesystem or python.data_science\"},"
      "\"allowed_imports\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 64, \"description\": \"Narrow the importable modules to these (within the profile)\"},"
      "\"files\": {\"type\": \"object\", \"maxProperties\": 64, \"description\": \"Input files for the scratch directory (python.filesystem, python.data_science): {relative path: text}, or {relative path: {content, encoding: base64}} for binary data. Paths are relative, without '..'; at most 64 files, 4 MiB each, 6 MiB in all.\","
        "\"additionalProperties\": {\"oneOf\": [{\"type\": \"string\"}, {\"type\": \"object\", \"required\": [\"content\"], \"additionalProperties\": false, \"properties\": {\"content\": {\"type\": \"string\"}, \"encoding\": {\"type\": \"string\", \"enum\": [\"utf-8\", \"base64\"]}}}]}},"
      "\"capture_output\": {\"type\": \"boolean\", \"description\": \"Return stdout and stderr (default true)\"},"
      "\"inspect_variables\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 64, \"description\": \"Names of variables whose final values to return\"},"
      "\"stdin\": {\"type\": \"string\", \"description\": \"Text available to input() and sys.stdin\"},"
      "\"use_container\": {\"type\": \"boolean\", \"description\": \"Accepted for compatibility with older sandbox servers; every execution here is isolated already\"}"
    "}},"
  "\"outputSchema\": {\"type\": \"object\","
    "\"required\": [\"execution_id\", \"status\", \"stdout\", \"stderr\", \"truncated\", \"result\", \"variables\", \"error\", \"timings\", \"resources\", \"exit\"],"
    "\"properties\": {"
      "\"execution_id\": {\"type\": \"string\", \"description\": \"UUIDv7 of this execution (get_execution)\"},"
      "\"status\": {\"type\": \"string\", \"enum\": [\"ok\", \"error\", \"syntax_error\", \"timeout\", \"cpu_limit\", \"memory_limit\", \"output_limit\", \"security_violation\", \"cancelled\", \"rejected\", \"lost\", \"internal_error\"]},"
      "\"stdout\": {\"type\": \"string\"},"
      "\"stderr\": {\"type\": \"string\"},"
      "\"truncated\": {\"type\": \"object\", \"required\": [\"stdout\", \"stderr\"], \"properties\": {\"stdout\": {\"type\": \"boolean\"}, \"stderr\": {\"type\": \"boolean\"}, \"images\": {\"type\": \"boolean\", \"description\": \"some figures were left out (caps)\"}, \"files\": {\"type\": \"boolean\", \"description\": \"some written files were left out (caps)\"}}},"
      "\"images\": {\"type\": \"array\", \"description\": \"matplotlib figures, in the order of the image content blocks\", \"items\": {\"type\": \"object\", \"required\": [\"mime\", \"width\", \"height\", \"bytes\"], \"properties\": {\"mime\": {\"type\": \"string\"}, \"width\": {\"type\": \"integer\"}, \"height\": {\"type\": \"integer\"}, \"bytes\": {\"type\": \"integer\"}}}},"
      "\"files\": {\"type\": \"array\", \"description\": \"files the code wrote in its scratch directory (unchanged inputs are not repeated)\", \"items\": {\"type\": \"object\", \"required\": [\"path\", \"bytes\", \"encoding\", \"content\"], \"properties\": {\"path\": {\"type\": \"string\"}, \"bytes\": {\"type\": \"integer\"}, \"encoding\": {\"type\": \"string\", \"enum\": [\"utf-8\", \"base64\"]}, \"content\": {\"type\": \"string\"}}}},"
      "\"result\": {\"type\": [\"string\", \"null\"], \"description\": \"repr() of the last expression, or of a global named result\"},"
      "\"variables\": {\"type\": \"object\", \"description\": \"inspect_variables: JSON values as values, others as their repr\"},"
      "\"error\": {\"oneOf\": [{\"type\": \"null\"}, {\"type\": \"object\", \"required\": [\"type\", \"message\"], \"properties\": {"
        "\"type\": {\"type\": \"string\"}, \"message\": {\"type\": \"string\"}, \"traceback\": {\"type\": [\"string\", \"null\"]}, \"line\": {\"type\": [\"integer\", \"null\"]}}}]},"
      "\"timings\": {\"type\": \"object\", \"required\": [\"queue_ms\", \"wall_ms\", \"cpu_ms\"], \"properties\": {\"queue_ms\": {\"type\": \"number\"}, \"wall_ms\": {\"type\": \"number\"}, \"cpu_ms\": {\"type\": \"number\"}}},"
      "\"resources\": {\"type\": \"object\", \"required\": [\"max_rss_kb\"], \"properties\": {\"max_rss_kb\": {\"type\": \"integer\"}}},"
      "\"exit\": {\"type\": \"object\", \"required\": [\"reason\", \"signal\", \"syscall\"], \"properties\": {\"reason\": {\"type\": [\"string\", \"null\"]}, \"signal\": {\"type\": [\"integer\", \"null\"]}, \"syscall\": {\"type\": [\"string\", \"null\"]}}}"
    "}},"
  "\"execution\": {\"taskSupport\": \"optional\"},"
  "\"annotations\": {\"title\": \"Run Python code\", \"readOnlyHint\": false, \"destructiveHint\": false, \"idempotentHint\": false, \"openWorldHint\": false}"
"}";

static const char s_validate_code[] = "{"
  "\"name\": \"validate_code\","
  "\"title\": \"Check Python code without running it\","
  "\"description\": \"Parse Python code and report syntax errors (with line and column), imports "
    "the profile does not allow, sandbox-escape patterns, counts and a complexity estimate, with "
    "recommendations. Nothing is executed. Advice only: the sandbox enforces its limits anyway.\","
  "\"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"code\"],"
    "\"properties\": {"
      "\"code\": {\"type\": \"string\", \"maxLength\": 1048576},"
      "\"profile\": {\"type\": \"string\", \"description\": \"Profile whose import rules apply (default python.basic)\"},"
      "\"allowed_imports\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 64}"
    "}},"
  "\"outputSchema\": {\"type\": \"object\", \"required\": [\"valid\", \"errors\", \"warnings\", \"analysis\", \"recommendations\"],"
    "\"properties\": {"
      "\"valid\": {\"type\": \"boolean\"},"
      "\"errors\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
      "\"warnings\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
      "\"details\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}},"
      "\"message\": {\"type\": \"string\"},"
      "\"analysis\": {\"type\": \"object\"},"
      "\"recommendations\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}"
    "}},"
  "\"annotations\": {\"readOnlyHint\": true, \"openWorldHint\": false}"
"}";

static const char s_get_sandbox_info[] = "{"
  "\"name\": \"get_sandbox_info\","
  "\"title\": \"Describe the sandbox\","
  "\"description\": \"List the sandbox profiles with their importable modules and default and "
    "maximum limits, your own limits (rate, concurrency, timeout, memory, profiles), and the "
    "farm's current capacity.\","
  "\"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {}},"
  "\"outputSchema\": {\"type\": \"object\", \"required\": [\"python\", \"profiles\", \"tenant\", \"capacity\"],"
    "\"properties\": {"
      "\"python\": {\"type\": \"string\"},"
      "\"profiles\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"name\", \"modules\", \"default_limits\", \"max_limits\"]}},"
      "\"tenant\": {\"type\": \"object\"},"
      "\"capacity\": {\"type\": \"object\"},"
      "\"security\": {\"type\": \"object\"}"
    "}},"
  "\"annotations\": {\"readOnlyHint\": true, \"openWorldHint\": false}"
"}";

static const char s_get_execution[] = "{"
  "\"name\": \"get_execution\","
  "\"title\": \"Look up an earlier execution\","
  "\"description\": \"Return the record of one of your executions by its execution_id: status, "
    "code, timings, output and the full structured result while it is retained (7 days).\","
  "\"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"execution_id\"],"
    "\"properties\": {\"execution_id\": {\"type\": \"string\", \"description\": \"UUID from execute_code\"}}},"
  "\"outputSchema\": {\"type\": \"object\", \"required\": [\"execution_id\", \"status\", \"profile\", \"created_ms\"],"
    "\"properties\": {"
      "\"execution_id\": {\"type\": \"string\"}, \"status\": {\"type\": \"string\"}, \"profile\": {\"type\": \"string\"},"
      "\"created_ms\": {\"type\": \"integer\"}, \"finished_ms\": {\"type\": [\"integer\", \"null\"]},"
      "\"code\": {\"type\": [\"string\", \"null\"]}, \"code_sha256\": {\"type\": [\"string\", \"null\"]},"
      "\"result\": {\"type\": [\"object\", \"null\"], \"description\": \"the execute_code structuredContent\"}"
    "}},"
  "\"annotations\": {\"readOnlyHint\": true, \"openWorldHint\": false}"
"}";

static const char s_list_executions[] = "{"
  "\"name\": \"list_executions\","
  "\"title\": \"List your recent executions\","
  "\"description\": \"List your executions, newest first, optionally only those with a given "
    "status. Pass the returned next_cursor as cursor for the next page.\","
  "\"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
      "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100, \"description\": \"default 20\"},"
      "\"cursor\": {\"type\": \"string\"},"
      "\"status\": {\"type\": \"string\", \"description\": \"only executions with this status\"}"
    "}},"
  "\"outputSchema\": {\"type\": \"object\", \"required\": [\"executions\", \"next_cursor\"],"
    "\"properties\": {"
      "\"executions\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"execution_id\", \"status\"]}},"
      "\"next_cursor\": {\"type\": [\"string\", \"null\"]}"
    "}},"
  "\"annotations\": {\"readOnlyHint\": true, \"openWorldHint\": false}"
"}";
/* clang-format on */

static const char *const s_defs[] = {s_execute_code,  s_validate_code,   s_get_sandbox_info,
                                     s_get_execution, s_list_executions, NULL};

json_t *tooldefs_load(void)
{
    json_t *tools = json_array();
    for (int i = 0; s_defs[i]; i++) {
        json_error_t err;
        json_t *t = json_loads(s_defs[i], JSON_REJECT_DUPLICATES, &err);
        if (!t) {
            fprintf(stderr, "tooldefs: tool %d: %s at %d\n", i, err.text, err.position);
            abort();
        }
        json_array_append_new(tools, t);
    }
    return tools;
}
