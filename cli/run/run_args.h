/* cli/run/run_args.h — one `snakepit run` as its command line asked for it, shared by the two ways
 * a run goes (run_http.c through a farm's MCP endpoint, run_broker.c straight to a broker) and
 * by what shows its outcome (run_show.c).
 *
 * Exit status: the job's status (status_t: 0 ok … 11 internal_error), or one of these when no
 * job status came back. */
#ifndef SP_RUN_ARGS_H
#define SP_RUN_ARGS_H
#include <linux/limits.h>
#include <stddef.h>
#include <sysexits.h>

#include "runfiles.h"

#define RUN_EX_USAGE       EX_USAGE       /* 64: the command line, or arguments the farm refused */
#define RUN_EX_UNREACHABLE EX_UNAVAILABLE /* 69: no farm running, or it does not answer */
#define RUN_EX_KEY         EX_NOPERM      /* 77: the farm refused the API key */
#define RUN_EX_CANTSAVE    EX_CANTCREAT   /* 73: an ok run whose --out files could not be saved */

typedef struct {
    long timeout_s;    /* 0: the profile's default */
    long memory_mb;    /* 0: the profile's default */
    long output_bytes; /* 0: the profile's default */
    char vars[2048];   /* names to print afterwards, comma-separated */
    char profile[65];  /* empty: routed by the code's PEP 723 block, else the default */
    char session[40];  /* run as this session's next cell; its profile is its own */
    char file[PATH_MAX];
    char stdin_text[4096];
    char files_in[4096]; /* --file-in paths, comma-separated */
    char out_dir[PATH_MAX];
    char url[512];          /* a farm's MCP endpoint; empty: the state directory's */
    char key[600];          /* its API key; empty: the state directory's */
    char ca_file[PATH_MAX]; /* CAs for an https URL; empty: the system's */
    long retry_s;           /* how long a rate-limited call is retried */
    char tenant[65];        /* with --broker */
    char state_dir[PATH_MAX];
    char broker[PATH_MAX + 64];
    int json;
    int validate;
    /* read from the above before the run starts */
    char *code;
    size_t code_len;
    runfiles_t inputs;
} run_args_t;

#endif
