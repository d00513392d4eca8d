/* mcp-frontend/tools/tooldefs.c — snakepit's tools as clients see them: one row per tool with its
 * description, arguments, output schema and handler (tools.h). A new tool is a row here and a
 * handler file. Descriptions name profiles only through proftext.h's placeholders, so they
 * follow common/profiles.c's table. Parameter names follow what users of the older sandbox
 * servers already send. Output schemas stay JSON text, so that what clients
 * see reads like what it is; a malformed one aborts at start. */
#include "tooldefs.h"

#include "execute_code.h"
#include "get_execution.h"
#include "get_usage.h"
#include "list_executions.h"
#include "sandbox_info.h"
#include "validate_code.h"

#define NAMES "\"items\": {\"type\": \"string\"}, \"maxItems\": 64"

/* The JSON stays laid out as JSON. */
/* clang-format off */
static const tool_arg_t s_execute_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "Python source to run", "\"maxLength\": 1048576"},
    {"timeout", ARG_NUMBER, ARG_NULLABLE,
     "Wall-clock limit in seconds (default {default_timeouts}; capped by your plan and the profile)",
     "\"exclusiveMinimum\": 0"},
    {"memory_limit", ARG_SIZE, ARG_NULLABLE,
     "Memory limit: MB as an integer, or a string like \"256m\" or \"1g\"", NULL},
    {"profile", ARG_STRING, ARG_NULLABLE | ARG_PROFILE,
     "Sandbox profile: one of {profiles}. Without it the code runs in the smallest of them that "
     "has every module it imports and every dependency it declares ({default_profile} for the "
     "standard library); the answer says which ran and why", NULL},
    {"output_limit", ARG_INTEGER, ARG_NULLABLE,
     "Bytes of stdout and of stderr each to keep (default and maximum: the profile's); past it "
     "the job ends output_limit with what was printed so far", "\"minimum\": 1"},
    {"allowed_imports", ARG_ARRAY, ARG_NULLABLE,
     "Narrow the importable modules to these (within the profile)", NAMES},
    {"files", ARG_OBJECT, ARG_NULLABLE,
     "Input files for the scratch directory ({workspace_profiles}): {relative path: text}, or "
     "{relative path: {content, encoding: base64}} for binary data. Paths are relative, without "
     "'..'; at most 64 files and 3 MiB in all (over HTTP the whole request, base64 included, "
     "must fit the 4 MiB body limit).",
     "\"maxProperties\": 64, \"additionalProperties\": {\"oneOf\": [{\"type\": \"string\"}, "
     "{\"type\": \"object\", \"required\": [\"content\"], \"additionalProperties\": false, "
     "\"properties\": {\"content\": {\"type\": \"string\"}, \"encoding\": {\"type\": \"string\", "
     "\"enum\": [\"utf-8\", \"base64\"]}}}]}"},
    {"dependencies", ARG_ARRAY, ARG_NULLABLE,
     "PEP 508 requirements beyond the profile's packages (like a PEP 723 block's), e.g. "
     "[\"tabulate>=0.8\"]: resolved from the operator's package source into a cached environment "
     "(the first call with a new set waits for it to be built); no network access from the code",
     "\"items\": {\"type\": \"string\", \"maxLength\": 200}, \"maxItems\": 32"},
    {"figure_format", ARG_STRING, ARG_NULLABLE,
     "How matplotlib figures come back: \"png\" (default, image content) or \"svg\" (rich outputs)",
     "\"enum\": [\"png\", \"svg\"]"},
    {"capture_output", ARG_BOOLEAN, 0, "Return stdout and stderr (default true)", NULL},
    {"inspect_variables", ARG_ARRAY, ARG_NULLABLE,
     "Names of variables whose final values to return", NAMES},
    {"stdin", ARG_STRING, ARG_NULLABLE, "Text available to input() and sys.stdin", NULL},
    {"use_container", ARG_BOOLEAN, 0,
     "Accepted for compatibility with older sandbox servers; every execution here is isolated "
     "already", NULL},
    {"session_id", ARG_STRING, ARG_NULLABLE,
     "Run the code as the next cell of this session (create_session): its globals, imports, "
     "figures and files persist between calls. The session's profile and memory apply; timeout "
     "and output limits apply to the cell", "\"minLength\": 36, \"maxLength\": 36"},
    {"atomic", ARG_BOOLEAN, ARG_NULLABLE,
     "With session_id: run the cell against a copy-on-write copy of the session; if it does not "
     "end ok (an error, its timeout, its memory limit, a crash, a refused operation) the "
     "session, its variables and its workspace files are exactly as before the cell and "
     "session.rolled_back is true (the cell's output and error still come back); if it ends ok "
     "it stays. Default: the session's (create_session's atomic)", NULL},
    {"network", ARG_BOOLEAN, 0,
     "Reach the network under your tenant's egress policy (default true when it has one; "
     "get_sandbox_info shows it): HTTP(S) through the standard proxy variables, and TCP to "
     "allowed host:port. false runs without network", NULL},
    {NULL},
};

static const char s_execute_output[] = "{\"type\": \"object\","
  "\"required\": [\"execution_id\", \"status\", \"stdout\", \"stderr\", \"truncated\", \"result\", \"variables\", \"error\", \"timings\", \"resources\", \"exit\"],"
  "\"properties\": {"
    "\"execution_id\": {\"type\": \"string\", \"description\": \"UUIDv7 of this execution (get_execution)\"},"
    "\"status\": {\"type\": \"string\", \"enum\": [\"ok\", \"error\", \"syntax_error\", \"timeout\", \"cpu_limit\", \"memory_limit\", \"output_limit\", \"security_violation\", \"cancelled\", \"rejected\", \"lost\", \"internal_error\", \"egress_limit\"]},"
    "\"stdout\": {\"type\": \"string\"},"
    "\"stderr\": {\"type\": \"string\"},"
    "\"truncated\": {\"type\": \"object\", \"required\": [\"stdout\", \"stderr\"], \"properties\": {\"stdout\": {\"type\": \"boolean\"}, \"stderr\": {\"type\": \"boolean\"}, \"images\": {\"type\": \"boolean\", \"description\": \"some figures were left out (caps)\"}, \"files\": {\"type\": \"boolean\", \"description\": \"some written files were left out (caps)\"}}},"
    "\"images\": {\"type\": \"array\", \"description\": \"matplotlib figures, in the order of the image content blocks\", \"items\": {\"type\": \"object\", \"required\": [\"mime\", \"width\", \"height\", \"bytes\"], \"properties\": {\"mime\": {\"type\": \"string\"}, \"width\": {\"type\": \"integer\"}, \"height\": {\"type\": \"integer\"}, \"bytes\": {\"type\": \"integer\"}}}},"
    "\"files\": {\"type\": \"array\", \"description\": \"files the code wrote in its scratch directory (unchanged inputs are not repeated); a large one has no content but a uri to read with resources/read\", \"items\": {\"type\": \"object\", \"required\": [\"path\", \"bytes\", \"encoding\", \"content\"], \"properties\": {\"path\": {\"type\": \"string\"}, \"bytes\": {\"type\": \"integer\"}, \"encoding\": {\"anyOf\": [{\"type\": \"string\", \"enum\": [\"utf-8\", \"base64\"]}, {\"type\": \"null\"}]}, \"content\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"uri\": {\"type\": \"string\"}, \"mimeType\": {\"type\": \"string\"}, \"note\": {\"type\": \"string\", \"description\": \"why a large file has neither content nor uri: the store did not keep it (a quota)\"}}}},"
    "\"outputs\": {\"type\": \"array\", \"description\": \"rich outputs of display() and of the last expression, one entry per representation (a DataFrame: text/plain, text/html, application/json), as the matching content blocks\", \"items\": {\"type\": \"object\", \"required\": [\"kind\", \"index\", \"mimeType\", \"data\"], \"properties\": {\"kind\": {\"type\": \"string\", \"enum\": [\"display\", \"result\"]}, \"index\": {\"type\": \"integer\"}, \"mimeType\": {\"type\": \"string\"}, \"data\": {\"description\": \"text, base64 (encoding), or for application/json any JSON value\", \"anyOf\": [{\"type\": \"string\"}, {\"type\": \"object\"}, {\"type\": \"array\"}, {\"type\": \"number\"}, {\"type\": \"boolean\"}, {\"type\": \"null\"}]}, \"encoding\": {\"type\": \"string\", \"enum\": [\"base64\"]}}}},"
    "\"result\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}], \"description\": \"repr() of the last expression, or of a global named result\"},"
    "\"variables\": {\"type\": \"object\", \"description\": \"inspect_variables: JSON values as values, others as their repr\"},"
    "\"error\": {\"oneOf\": [{\"type\": \"null\"}, {\"type\": \"object\", \"required\": [\"type\", \"message\"], \"properties\": {"
      "\"type\": {\"type\": \"string\"}, \"message\": {\"type\": \"string\"}, \"traceback\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"line\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}}}]},"
    "\"timings\": {\"type\": \"object\", \"required\": [\"queue_ms\", \"wall_ms\", \"cpu_ms\"], \"properties\": {\"queue_ms\": {\"type\": \"number\"}, \"wall_ms\": {\"type\": \"number\"}, \"cpu_ms\": {\"type\": \"number\"}}},"
    "\"resources\": {\"type\": \"object\", \"required\": [\"max_rss_kb\"], \"properties\": {\"max_rss_kb\": {\"type\": \"integer\"}}},"
    "\"exit\": {\"type\": \"object\", \"required\": [\"reason\", \"signal\", \"syscall\"], \"properties\": {\"reason\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"signal\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}, \"syscall\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"code\": {\"type\": \"integer\", \"description\": \"the exit status the code chose (sys.exit(42): 42)\"}}},"
    "\"security_events\": {\"type\": \"array\", \"description\": \"operations the sandbox refused, whether the code caught them (status as the code ended) or not (security_violation)\", \"items\": {\"type\": \"object\", \"required\": [\"operation\", \"target\", \"layer\", \"count\"], \"properties\": {\"operation\": {\"type\": \"string\"}, \"target\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"layer\": {\"type\": \"string\"}, \"count\": {\"type\": \"integer\"}}}},"
    "\"session_id\": {\"type\": \"string\", \"description\": \"the session the cell ran in (with session_id)\"},"
    "\"cell\": {\"type\": \"integer\", \"description\": \"the cell's number in its session: 1, 2, ...\"},"
    "\"session\": {\"type\": \"object\", \"description\": \"the session after the cell\", \"properties\": {\"alive\": {\"type\": \"boolean\"}, \"end_reason\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"memory_in_use_mb\": {\"type\": \"integer\"},"
      "\"atomic\": {\"type\": \"boolean\", \"description\": \"the cell was atomic\"}, \"rolled_back\": {\"type\": \"boolean\", \"description\": \"an atomic cell that did not end ok: the session is exactly as before it\"},"
      "\"resumed\": {\"type\": \"object\", \"description\": \"the session had been freed (hibernated, or its executor went away) and was resumed from its checkpoint for this call\", \"properties\": {\"from_cell\": {\"type\": \"integer\", \"description\": \"the checkpoint followed this cell\"}, \"reason\": {\"type\": \"string\"}, \"checkpointed_at\": {\"type\": \"string\"}, \"not_restored\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}}}}},"
    "\"profile\": {\"type\": \"string\", \"description\": \"the profile the code ran in\"},"
    "\"profile_reason\": {\"type\": \"string\", \"description\": \"why that one: named by the call, inferred from the imports or dependencies, the session's, or the smallest served\"},"
    "\"limits_adjusted\": {\"type\": \"object\", \"description\": \"limits asked for beyond a maximum, and what was used instead\", \"additionalProperties\": {\"type\": \"object\", \"properties\": {\"requested\": {\"type\": \"number\"}, \"used\": {\"type\": \"number\"}, \"unit\": {\"type\": \"string\"}, \"why\": {\"type\": \"string\"}}}},"
    "\"egress\": {\"type\": \"array\", \"description\": \"each network destination the code asked for, with the egress policy's verdict and the bytes each way\", \"items\": {\"type\": \"object\", \"required\": [\"host\", \"port\", \"verdict\", \"connections\", \"bytes_out\", \"bytes_in\"], \"properties\": {\"host\": {\"type\": \"string\"}, \"port\": {\"type\": \"integer\"}, \"verdict\": {\"type\": \"string\", \"enum\": [\"allowed\", \"refused\", \"failed\"]}, \"reason\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"connections\": {\"type\": \"integer\"}, \"bytes_out\": {\"type\": \"integer\"}, \"bytes_in\": {\"type\": \"integer\"}}}}"
  "}}";

static const tool_arg_t s_validate_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, NULL, "\"maxLength\": 1048576"},
    {"session_id", ARG_STRING, ARG_NULLABLE,
     "Check the code as a cell of this session: in its profile", "\"minLength\": 36, \"maxLength\": 36"},
    {"profile", ARG_STRING, ARG_NULLABLE | ARG_PROFILE,
     "Profile whose import rules apply: one of {profiles} (without it, the one execute_code would "
     "choose for this code)", NULL},
    {"allowed_imports", ARG_ARRAY, ARG_NULLABLE, NULL, NAMES},
    {NULL},
};

static const char s_validate_output[] = "{\"type\": \"object\", \"required\": [\"valid\", \"errors\", \"warnings\", \"analysis\", \"recommendations\"],"
  "\"properties\": {"
    "\"valid\": {\"type\": \"boolean\"},"
    "\"errors\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"warnings\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"details\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}},"
    "\"message\": {\"type\": \"string\"},"
    "\"analysis\": {\"type\": \"object\"},"
    "\"recommendations\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}"
  "}}";

static const char s_info_output[] = "{\"type\": \"object\", \"required\": [\"python\", \"profiles\", \"tenant\", \"capacity\"],"
  "\"properties\": {"
    "\"python\": {\"type\": \"string\"},"
    "\"profiles\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"name\", \"modules\", \"default_limits\", \"max_limits\"]}},"
    "\"tenant\": {\"type\": \"object\"},"
    "\"capacity\": {\"type\": \"object\"},"
    "\"security\": {\"type\": \"object\"}"
  "}}";

static const tool_arg_t s_get_execution_args[] = {
    {"execution_id", ARG_STRING, ARG_REQUIRED, "UUID from execute_code", NULL},
    {NULL},
};

static const char s_get_execution_output[] = "{\"type\": \"object\", \"required\": [\"execution_id\", \"status\", \"profile\", \"created_ms\"],"
  "\"properties\": {"
    "\"execution_id\": {\"type\": \"string\"}, \"status\": {\"type\": \"string\"}, \"profile\": {\"type\": \"string\"},"
    "\"created_ms\": {\"type\": \"integer\"}, \"finished_ms\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]},"
    "\"code\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"code_sha256\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
    "\"session_id\": {\"type\": \"string\", \"description\": \"a session's cell: its session\"},"
    "\"cell\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}], \"description\": \"and its number there\"},"
    "\"result\": {\"anyOf\": [{\"type\": \"object\"}, {\"type\": \"null\"}], \"description\": \"the execute_code structuredContent\"}"
  "}}";

static const tool_arg_t s_list_executions_args[] = {
    {"limit", ARG_INTEGER, 0, "default 20", "\"minimum\": 1, \"maximum\": 100"},
    {"cursor", ARG_STRING, ARG_NULLABLE, NULL, NULL},
    {"status", ARG_STRING, 0, "only executions with this status", NULL},
    {"profile", ARG_STRING, 0, "only executions that ran in this profile", NULL},
    {NULL},
};

static const char s_list_executions_output[] = "{\"type\": \"object\", \"required\": [\"executions\", \"next_cursor\"],"
  "\"properties\": {"
    "\"executions\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"execution_id\", \"status\"]}},"
    "\"next_cursor\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}"
  "}}";

static const tool_arg_t s_get_usage_args[] = {
    {"days", ARG_INTEGER, ARG_NULLABLE, "UTC days to show, today first (default 7)",
     "\"minimum\": 1, \"maximum\": 90"},
    {NULL},
};

#define USAGE_COUNTS "\"executions\": {\"type\": \"integer\"}, \"cells\": {\"type\": \"integer\"}, \"sessions\": {\"type\": \"integer\", \"description\": \"sessions started: created, forked, restored into a new one\"}, \"snapshots\": {\"type\": \"integer\", \"description\": \"snapshots saved\"}, \"cpu_seconds\": {\"type\": \"number\"}, \"wall_seconds\": {\"type\": \"number\"}, \"statuses\": {\"type\": \"object\", \"description\": \"executions by status\", \"additionalProperties\": {\"type\": \"integer\"}}"

static const char s_get_usage_output[] = "{\"type\": \"object\", \"required\": [\"tenant\", \"days_asked\", \"days\", \"total\", \"now\"],"
  "\"properties\": {"
    "\"tenant\": {\"type\": \"string\"},"
    "\"days_asked\": {\"type\": \"integer\"},"
    "\"days\": {\"type\": \"array\", \"description\": \"one entry per UTC day, today first\", \"items\": {\"type\": \"object\", \"required\": [\"day\", \"executions\", \"cpu_seconds\"], \"properties\": {\"day\": {\"type\": \"string\"}, " USAGE_COUNTS "}}},"
    "\"total\": {\"type\": \"object\", \"properties\": {" USAGE_COUNTS "}},"
    "\"now\": {\"type\": \"object\", \"description\": \"what you hold now, against your quotas\", \"properties\": {\"live_sessions\": {\"type\": \"integer\"}, \"max_sessions\": {\"type\": \"integer\"}, \"snapshots\": {\"type\": \"integer\"}, \"max_snapshots\": {\"type\": \"integer\"}, \"snapshot_bytes\": {\"type\": \"integer\"}, \"max_snapshot_mb\": {\"type\": \"integer\"}}}"
  "}}";

#define READ_ONLY "{\"readOnlyHint\": true, \"openWorldHint\": false}"

const tool_t tooldefs[] = {
    {.name = "execute_code",
     .title = "Run Python code",
     .description =
        "Run Python 3.11 code in a fresh, isolated sandbox and return what it printed, the value "
        "of its last expression (or of a variable named `result`), any exception, and timings. "
        "Each call starts from a clean interpreter, unless session_id names a session "
        "(create_session): then it runs as that session's next cell and its state persists. "
        "There is no network or subprocess access. Profiles (see get_sandbox_info): {profile_summaries}. "
        "In the profiles with a scratch directory ({workspace_profiles}), `files` puts input files "
        "there (read them with relative paths, e.g. pd.read_csv('data.csv')), and files the code "
        "writes there come back in structuredContent.files (large ones as resource links). In "
        "{figures_profiles} every matplotlib figure left open (or shown with plt.show()) comes back "
        "as a PNG image. display(obj) and the last expression come back rendered by type in "
        "structuredContent.outputs and as content blocks: a DataFrame as HTML and JSON, a figure "
        "as an image, other values as text. A PEP 723 `# /// script` block's `dependencies` and "
        "the `dependencies` argument are met from the profile's packages, else from the "
        "operator's package source if it has one. Without a `profile` the call runs in the "
        "smallest profile that has every module the code imports and every dependency it "
        "declares (`import pandas` runs where pandas is); the answer's `profile` and "
        "`profile_reason` say which and why. Limits: timeout in seconds (default {default_timeouts}), memory_limit in "
        "MB or as a string such as \"256m\". isError is true for every status other than ok.",
     .args = s_execute_args,
     .output_schema = s_execute_output,
     .annotations = "{\"title\": \"Run Python code\", \"readOnlyHint\": false, \"destructiveHint\": "
                    "false, \"idempotentHint\": false, \"openWorldHint\": false}",
     .run = execute_code_run,
     .tasks = 1},
    {.name = "validate_code",
     .title = "Check Python code without running it",
     .description =
        "Parse Python code and report syntax errors (with line and column), imports the profile "
        "does not allow, calls the sandbox refuses when the code runs, counts and a complexity "
        "estimate, with "
        "recommendations. Nothing is executed. Advice only: the sandbox enforces its limits anyway.",
     .args = s_validate_args,
     .output_schema = s_validate_output,
     .annotations = READ_ONLY,
     .run = validate_code_run},
    {.name = "get_sandbox_info",
     .title = "Describe the sandbox",
     .description =
        "List the sandbox profiles this farm serves, with their importable modules, package "
        "versions and default and maximum limits, and your own limits (rate, concurrency, "
        "timeout, memory, profiles, sessions and snapshots). get_usage shows what you used.",
     .output_schema = s_info_output,
     .annotations = READ_ONLY,
     .run = sandbox_info_run},
    {.name = "get_execution",
     .title = "Look up an earlier execution",
     .description =
        "Return the record of one of your executions by its execution_id: status, code, timings, "
        "output and the full structured result while it is retained (7 days).",
     .args = s_get_execution_args,
     .output_schema = s_get_execution_output,
     .annotations = READ_ONLY,
     .run = get_execution_run},
    {.name = "list_executions",
     .title = "List your recent executions",
     .description =
        "List your executions, newest first, optionally only those with a given status. Pass the "
        "returned next_cursor as cursor for the next page.",
     .args = s_list_executions_args,
     .output_schema = s_list_executions_output,
     .annotations = READ_ONLY,
     .run = list_executions_run},
    {.name = "get_usage",
     .title = "Your usage",
     .description =
        "Show what you used, by UTC day (today first): executions with their statuses, CPU and "
        "wall seconds, session cells, sessions started, snapshots saved; and what you hold now "
        "(live sessions, snapshots and their bytes) against your quotas. Only your own tenant's.",
     .args = s_get_usage_args,
     .output_schema = s_get_usage_output,
     .annotations = READ_ONLY,
     .run = get_usage_run},
    {NULL},
};
/* clang-format on */
