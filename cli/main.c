/* cli/main.c — the `snakepit` command: one binary, one subcommand per task. */
#include <stdio.h>
#include <string.h>

#include "cli/run/run.h"
#include "mcp.h"
#include "session.h"
#include "status.h"
#include "tenant.h"
#include "up.h"
#include "usage.h"

#ifdef SNAKEPIT_HAVE_KEYGEN
#include "keygen.h"
#endif

static const char *s_usage =
    "usage: snakepit <command> [options]   (snakepit <command> --help for each)\n"
    "\n"
    "  up          start a whole farm on this machine and print how to connect\n"
    "  mcp --stdio serve MCP on stdin/stdout, backed by the local farm\n"
    "  run         run Python code in the sandbox and print its output\n"
    "  session     new, run, fork, close, list sessions: state kept between runs\n"
    "  tenant      add, set, list, show, rotate-key, remove tenants and their API keys\n"
    "  keygen      write a CURVE key pair for a broker, executor or front-end\n"
    "  status      the whole farm on one screen: executors, slots, queues, rates\n"
    "  usage       executions, CPU and wall time per tenant per day\n"
    "  version     print the version\n";

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(s_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 64 : 0;
    }
    const char *cmd = argv[1];
    argc--, argv++;
    if (!strcmp(cmd, "up")) return up_main(argc, argv);
    if (!strcmp(cmd, "run")) return run_main(argc, argv);
    if (!strcmp(cmd, "session")) return session_main(argc, argv);
    if (!strcmp(cmd, "mcp")) return mcp_main(argc, argv);
    if (!strcmp(cmd, "tenant")) return tenant_main(argc, argv);
    if (!strcmp(cmd, "status")) return status_main(argc, argv);
    if (!strcmp(cmd, "usage")) return usage_main(argc, argv);
#ifdef SNAKEPIT_HAVE_KEYGEN
    if (!strcmp(cmd, "keygen")) return keygen_main(argc, argv);
#endif
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("snakepit %s (protocol SPC1/SPW1)\n", SNAKEPIT_VERSION);
        return 0;
    }
    fprintf(stderr, "snakepit: unknown command '%s'\n\n%s", cmd, s_usage);
    return 64;
}
