/* mcp-frontend/tools/sessiondefs.c — the session tools as clients see them: one row per
 * tool (tools.h), handlers in session_tools.c and snapshot_tools.c. execute_code runs a cell
 * in a session when given session_id (its row is tooldefs.c's). Sessions are explicit ids,
 * independent of any MCP session, so they work in every protocol era and through any
 * front-end. */
#include "sessiondefs.h"

#include "map_session.h"
#include "session_tools.h"
#include "snapshot_tools.h"

#define SESSION_ID "\"minLength\": 36, \"maxLength\": 36"
#define WRITES     "{\"readOnlyHint\": false, \"destructiveHint\": false, \"openWorldHint\": false}"
#define READS      "{\"readOnlyHint\": true, \"openWorldHint\": false}"

/* The JSON stays laid out as JSON. */
/* clang-format off */
static const tool_arg_t s_create_args[] = {
    {"profile", ARG_STRING, ARG_NULLABLE | ARG_PROFILE,
     "Sandbox profile: one of {profiles} (default {default_profile})", NULL},
    {"memory_limit", ARG_SIZE, ARG_NULLABLE,
     "Memory for the whole session: MB as an integer, or a string like \"512m\" (default the "
     "profile's); a cell that needs more ends the session (memory_limit)", NULL},
    {"idle_timeout", ARG_NUMBER, ARG_NULLABLE,
     "Seconds the session may sit idle before it ends (default 600; capped by your plan)",
     "\"exclusiveMinimum\": 0"},
    {"files", ARG_OBJECT, ARG_NULLABLE,
     "Files to put in the session's workspace ({workspace_profiles}), as execute_code's files",
     "\"maxProperties\": 64"},
    {"atomic", ARG_BOOLEAN, ARG_NULLABLE,
     "Make every cell atomic unless execute_code says otherwise: a cell that does not end ok "
     "leaves the session exactly as it was before it (default false)", NULL},
    {"network", ARG_BOOLEAN, 0,
     "Give the session network under your tenant's egress policy (default true when it has "
     "one): its cells reach what the policy allows, each cell may still pass network: false. "
     "false: the session never has network", NULL},
    {NULL},
};

static const char s_session_output[] = "{\"type\": \"object\","
  "\"required\": [\"session_id\", \"profile\", \"limits\", \"expires_at\"],"
  "\"properties\": {"
    "\"session_id\": {\"type\": \"string\"},"
    "\"profile\": {\"type\": \"string\"},"
    "\"limits\": {\"type\": \"object\", \"properties\": {\"memory_mb\": {\"type\": \"integer\"}, \"idle_timeout_s\": {\"type\": \"integer\"}, \"timeout_s\": {\"type\": \"integer\", \"description\": \"a cell's default timeout\"}, \"max_timeout_s\": {\"type\": \"integer\"}}},"
    "\"expires_at\": {\"type\": \"string\", \"description\": \"when it ends if left idle (ISO 8601, UTC); each cell moves it\"},"
    "\"forks_left\": {\"type\": \"integer\", \"description\": \"how many more times it (and its forks) may be forked\"},"
    "\"parent_session_id\": {\"type\": \"string\"},"
    "\"atomic\": {\"type\": \"boolean\", \"description\": \"its cells are atomic by default\"},"
    "\"session_ids\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"fork_session: every new session, in order (the first is session_id)\"}"
  "}}";

static const tool_arg_t s_fork_args[] = {
    {"session_id", ARG_STRING, ARG_REQUIRED, "The session, as create_session returned it", SESSION_ID},
    {"count", ARG_INTEGER, ARG_NULLABLE,
     "How many forks to make at once (default 1), all or none, within your session quotas; "
     "their ids come back in session_ids", "\"minimum\": 1, \"maximum\": 64"},
    {NULL},
};

static const tool_arg_t s_map_args[] = {
    {"session_id", ARG_STRING, ARG_REQUIRED, "The session to branch from", SESSION_ID},
    {"codes", ARG_ARRAY, ARG_REQUIRED,
     "Python code strings: each runs as the first cell of a fresh fork of the session, all at "
     "once", "\"items\": {\"type\": \"string\", \"maxLength\": 1048576}, \"minItems\": 1, \"maxItems\": 64"},
    {"keep", ARG_BOOLEAN, ARG_NULLABLE,
     "Keep the forks afterwards (their ids in session_ids); by default they are closed", NULL},
    {"timeout", ARG_NUMBER, ARG_NULLABLE,
     "Each cell's wall-clock limit in seconds (default the profile's)", "\"exclusiveMinimum\": 0"},
    {"output_limit", ARG_INTEGER, ARG_NULLABLE, "Bytes of stdout and of stderr each to keep per cell",
     "\"minimum\": 1"},
    {NULL},
};

static const char s_map_output[] = "{\"type\": \"object\", \"required\": [\"session_id\", \"results\", \"kept\"],"
  "\"properties\": {"
    "\"session_id\": {\"type\": \"string\", \"description\": \"the session the forks came from (unchanged)\"},"
    "\"results\": {\"type\": \"array\", \"description\": \"one per code string, in order: execute_code's structuredContent with index\", \"items\": {\"type\": \"object\", \"required\": [\"index\", \"status\"]}},"
    "\"kept\": {\"type\": \"boolean\"},"
    "\"session_ids\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"with keep: each branch's session, in order\"}"
  "}}";

static const tool_arg_t s_session_args[] = {
    {"session_id", ARG_STRING, ARG_REQUIRED, "The session, as create_session returned it", SESSION_ID},
    {NULL},
};

static const char s_close_output[] = "{\"type\": \"object\", \"required\": [\"session_id\", \"closed\"],"
  "\"properties\": {\"session_id\": {\"type\": \"string\"}, \"closed\": {\"type\": \"boolean\"}}}";

static const char s_list_output[] = "{\"type\": \"object\", \"required\": [\"sessions\"],"
  "\"properties\": {\"sessions\": {\"type\": \"array\", \"items\": {\"type\": \"object\","
    "\"required\": [\"session_id\", \"profile\", \"created\", \"last_used\", \"cells\", \"memory_in_use_mb\"],"
    "\"properties\": {\"session_id\": {\"type\": \"string\"}, \"profile\": {\"type\": \"string\"},"
      "\"created\": {\"type\": \"string\"}, \"last_used\": {\"type\": \"string\"}, \"cells\": {\"type\": \"integer\"},"
      "\"memory_in_use_mb\": {\"type\": \"integer\", \"description\": \"its proportional share of memory, as last measured\"},"
      "\"memory_limit_mb\": {\"type\": \"integer\"}, \"idle_timeout_s\": {\"type\": \"integer\"},"
      "\"expires_at\": {\"type\": \"string\"}, \"parent_session_id\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
      "\"atomic\": {\"type\": \"boolean\"},"
      "\"state\": {\"type\": \"string\", \"enum\": [\"live\", \"hibernated\"], \"description\": \"hibernated: its node freed it after a checkpoint; its next call resumes it\"},"
      "\"hibernated_because\": {\"type\": \"string\"},"
      "\"checkpoint\": {\"type\": \"object\", \"description\": \"its latest checkpoint: what it resumes from\", \"properties\": {\"after_cell\": {\"type\": \"integer\"}, \"at\": {\"type\": \"string\"}}}}}}}}";

static const tool_arg_t s_snapshot_args[] = {
    {"session_id", ARG_STRING, ARG_REQUIRED, "The session to save", SESSION_ID},
    {"description", ARG_STRING, ARG_NULLABLE, "What this snapshot is, for you later", "\"maxLength\": 1023"},
    {NULL},
};

static const char s_snapshot_output[] = "{\"type\": \"object\","
  "\"required\": [\"snapshot_id\", \"session_id\", \"created\", \"profile\", \"bytes\", \"variables\", \"skipped\", \"files\"],"
  "\"properties\": {"
    "\"snapshot_id\": {\"type\": \"string\"}, \"session_id\": {\"type\": \"string\"},"
    "\"description\": {\"type\": \"string\"}, \"created\": {\"type\": \"string\"}, \"profile\": {\"type\": \"string\"},"
    "\"memory_mb\": {\"type\": \"integer\"}, \"idle_timeout_s\": {\"type\": \"integer\"}, \"bytes\": {\"type\": \"integer\"},"
    "\"variables\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"names saved (pickled)\"},"
    "\"imports\": {\"type\": \"object\", \"description\": \"names bound to modules, imported again on restore\"},"
    "\"skipped\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"name\", \"reason\"]}},"
    "\"files\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"path\", \"size\", \"mtime\", \"sha256\"],"
      "\"properties\": {\"path\": {\"type\": \"string\"}, \"size\": {\"type\": \"integer\"}, \"mtime\": {\"type\": \"string\"},"
      "\"mtime_ns\": {\"type\": \"integer\"}, \"sha256\": {\"type\": \"string\"}, \"mode\": {\"type\": \"integer\"}}}}"
  "}}";

static const tool_arg_t s_restore_args[] = {
    {"snapshot_id", ARG_STRING, ARG_REQUIRED, "The snapshot, as create_state_snapshot returned it", SESSION_ID},
    {"session_id", ARG_STRING, ARG_NULLABLE,
     "Restore into this session (its files then match the snapshot's; the snapshot's variables "
     "are bound again); without it, into a new session on any node", SESSION_ID},
    {NULL},
};

static const char s_restore_output[] = "{\"type\": \"object\","
  "\"required\": [\"session_id\", \"snapshot_id\", \"new_session\", \"restored\", \"failed\"],"
  "\"properties\": {"
    "\"session_id\": {\"type\": \"string\"}, \"snapshot_id\": {\"type\": \"string\"}, \"new_session\": {\"type\": \"boolean\"},"
    "\"restored\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"failed\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"name\", \"reason\"]}},"
    "\"files\": {\"type\": \"integer\"}, \"skipped_at_snapshot\": {\"type\": \"array\"}"
  "}}";

static const tool_arg_t s_list_snapshots_args[] = {
    {"session_id", ARG_STRING, ARG_NULLABLE, "Only this session's snapshots", SESSION_ID},
    {"limit", ARG_INTEGER, ARG_NULLABLE, "default 50", "\"minimum\": 1, \"maximum\": 500"},
    {NULL},
};

static const char s_list_snapshots_output[] = "{\"type\": \"object\", \"required\": [\"snapshots\"],"
  "\"properties\": {\"snapshots\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"snapshot_id\", \"session_id\", \"created\"]}}}}";

static const tool_arg_t s_delete_args[] = {
    {"snapshot_id", ARG_STRING, ARG_REQUIRED, NULL, SESSION_ID},
    {NULL},
};

static const char s_delete_output[] = "{\"type\": \"object\", \"required\": [\"snapshot_id\", \"deleted\"],"
  "\"properties\": {\"snapshot_id\": {\"type\": \"string\"}, \"deleted\": {\"type\": \"boolean\"}}}";

const tool_t sessiondefs[] = {
    {.name = "create_session",
     .title = "Start a Python session",
     .description =
        "Start a session: one sandboxed Python interpreter kept alive for you, so that globals, "
        "imports, functions, open figures and workspace files persist from one execute_code call "
        "(with session_id) to the next, like a notebook's cells. Each cell runs under every "
        "sandbox layer; it is interrupted (KeyboardInterrupt) at its timeout and the session "
        "lives on. The session ends when closed, after idle_timeout seconds unused, when a cell "
        "exceeds its memory_limit, or when the node it lives on is lost (save it first with "
        "create_state_snapshot). Returns session_id, profile, limits and expires_at.",
     .args = s_create_args,
     .output_schema = s_session_output,
     .annotations = WRITES,
     .run = create_session_run},
    {.name = "fork_session",
     .title = "Fork a session",
     .description =
        "Clone a live session in one copy-on-write fork (milliseconds): the new session starts "
        "with the same variables, imports and workspace files, and from then on changes in "
        "either never show in the other, nor in another fork. Use it to branch an "
        "exploration; count makes up to 64 forks in one call. Returns the new session_id (and "
        "with count, session_ids).",
     .args = s_fork_args,
     .output_schema = s_session_output,
     .annotations = WRITES,
     .run = fork_session_run},
    {.name = "map_session",
     .title = "Run code strings in forks of a session",
     .description =
        "Run each of a list of code strings (up to 64) in a fresh fork of a session, all at "
        "once, and get every result back in order, each as execute_code's. Each branch starts "
        "from the session's state and sees nothing of the others; the session itself is "
        "unchanged. The forks are closed afterwards unless keep is true.",
     .args = s_map_args,
     .output_schema = s_map_output,
     .annotations = WRITES,
     .run = map_session_run},
    {.name = "close_session",
     .title = "Close a session",
     .description = "End a session and free what it holds. Its snapshots are kept.",
     .args = s_session_args,
     .output_schema = s_close_output,
     .annotations = "{\"readOnlyHint\": false, \"destructiveHint\": true, \"openWorldHint\": false}",
     .run = close_session_run},
    {.name = "list_sessions",
     .title = "List your sessions",
     .description =
        "List your live sessions: id, profile, created, last used, cells run, memory in use "
        "and when each expires if left idle.",
     .output_schema = s_list_output,
     .annotations = READS,
     .run = list_sessions_run},
    {.name = "create_state_snapshot",
     .title = "Save a session's state",
     .description =
        "Save a session's workspace files (path, size, mtime, SHA-256, content) and its "
        "picklable variables (modules as the names they were imported under; what cannot be "
        "pickled, such as functions defined in the session, is listed with why) into durable "
        "storage. Snapshots outlive the session and its node; restore_state_snapshot brings one "
        "back into this or a new session.",
     .args = s_snapshot_args,
     .output_schema = s_snapshot_output,
     .annotations = WRITES,
     .run = create_state_snapshot_run},
    {.name = "restore_state_snapshot",
     .title = "Restore a saved session state",
     .description =
        "Restore a snapshot into the session given by session_id (files not in the snapshot "
        "are deleted, changed ones rewritten, missing ones recreated, mtimes restored; the "
        "snapshot's variables are bound again), or, without session_id, into a new session on "
        "any node. Reports which names were restored and which failed, and why.",
     .args = s_restore_args,
     .output_schema = s_restore_output,
     .annotations = WRITES,
     .run = restore_state_snapshot_run},
    {.name = "list_state_snapshots",
     .title = "List your snapshots",
     .description = "List your snapshots, newest first, optionally only one session's.",
     .args = s_list_snapshots_args,
     .output_schema = s_list_snapshots_output,
     .annotations = READS,
     .run = list_state_snapshots_run},
    {.name = "delete_state_snapshot",
     .title = "Delete a snapshot",
     .description = "Delete one of your snapshots, freeing its place in your snapshot quota.",
     .args = s_delete_args,
     .output_schema = s_delete_output,
     .annotations = "{\"readOnlyHint\": false, \"destructiveHint\": true, \"openWorldHint\": false}",
     .run = delete_state_snapshot_run},
    {NULL},
};
/* clang-format on */
