/* cli/main.c — the `snakepit` command: one binary, one subcommand per task, one row per
 * subcommand (its name, what `snakepit --help` says of it, its main). */
#include <stdio.h>
#include <string.h>

#include "backup.h"
#include "cli/run/run.h"
#include "down.h"
#include "drain.h"
#include "mcp.h"
#include "session.h"
#include "status.h"
#include "tenant.h"
#include "up.h"
#include "usage.h"

#ifdef SNAKEPIT_HAVE_KEYGEN
#include "keygen.h"
#endif

static int s_version(int argc, char **argv)
{
    (void)argc, (void)argv;
    printf("snakepit %s (protocol SPC1/SPW1)\n", SNAKEPIT_VERSION);
    return 0;
}

typedef struct {
    const char *name;
    const char *shown; /* as --help shows it, with the flag it cannot do without */
    const char *summary;
    int (*main)(int argc, char **argv);
} command_t;

static const command_t s_commands[] = {
    {"up", "up", "start a whole farm on this machine and print how to connect", up_main},
    {"down", "down", "stop the farm of a state directory (started by up or mcp --stdio)",
     down_main},
    {"mcp", "mcp --stdio", "serve MCP on stdin/stdout, backed by the local farm", mcp_main},
    {"run", "run", "run Python code in the sandbox and print its output", run_main},
    {"session", "session", "new, run, fork, close, list sessions: state kept between runs",
     session_main},
    {"tenant", "tenant", "add, set, list, show, rotate-key, remove tenants and their API keys",
     tenant_main},
#ifdef SNAKEPIT_HAVE_KEYGEN
    {"keygen", "keygen", "write a CURVE key pair for a broker, executor or front-end", keygen_main},
#endif
    {"status", "status", "the whole farm on one screen: executors, slots, queues, rates",
     status_main},
    {"drain", "drain", "drain an executor node: no new job, running ones finish, then it exits",
     drain_main},
    {"usage", "usage", "executions, CPU and wall time per tenant per day", usage_main},
    {"backup", "backup", "copy a farm's tenants, keys, usage, snapshots and records to a file",
     backup_main},
    {"restore", "restore", "put a backup file back into a farm's Redis", restore_main},
    {"version", "version", "print the version", s_version},
};
#define N_COMMANDS (sizeof s_commands / sizeof s_commands[0])

static void s_usage(FILE *out)
{
    fputs("usage: snakepit <command> [options]   (snakepit <command> --help for each)\n\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-11s %s\n", s_commands[i].shown, s_commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h")) {
        s_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 64 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version")) cmd = "version";
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(cmd, s_commands[i].name)) return s_commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "snakepit: unknown command '%s'\n\n", cmd);
    s_usage(stderr);
    return 64;
}
