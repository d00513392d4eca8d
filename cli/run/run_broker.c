/* cli/run/run_broker.c — see run_broker.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curve_cert.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/loop.h"
#include "proto/client.h"
#include "proto/job.h"
#include "proto/result.h"
#include "proto/result_json.h"
#include "run_broker.h"
#include "run_route.h"
#include "run_show.h"

#define SUBMIT_MS         3000  /* ZMQ_IMMEDIATE: a submit fails until the connection is up */
#define DEADLINE_GRACE_MS 30000 /* past the job's wall limit: the queue, and the way back */

typedef struct {
    int done;
    result_t res;
    int decoded;
    char err[256];
} answer_t;

static void s_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev, const uint8_t *body,
                    size_t len)
{
    (void)id;
    answer_t *w = arg;
    if (ev != CLIENT_RESULT) return;
    w->done = 1;
    w->decoded = result_decode(body, len, &w->res, w->err, sizeof w->err) == 0;
}

static void s_stop(loop_t *loop, void *arg)
{
    answer_t *w = arg;
    if (w->done) loop_stop(loop);
}

/* The JobSpec of this run with its limits as asked: the executor resolves them against its
 * own profile table. */
static void s_encode_job(const run_args_t *a, const profile_t *p, buf_t *body)
{
    jobspec_t job;
    jobspec_init(&job);
    job.kind = a->validate ? JOB_VALIDATE : JOB_EXEC;
    job.tenant = (char *)a->tenant;
    job.service = (char *)p->name;
    job.code = a->code;
    job.code_len = a->code_len;
    job.limits.wall_ms = job.limits.cpu_ms = a->timeout_s * 1000;
    job.limits.memory_mb = a->memory_mb;
    job.limits.output_bytes = a->output_bytes;
    char list[sizeof a->vars], *names[JOB_MAX_NAMES];
    snprintf(list, sizeof list, "%s", a->vars);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && job.n_inspect < JOB_MAX_NAMES;
         tok = strtok_r(NULL, ",", &save))
        names[job.n_inspect++] = tok;
    job.inspect = names;
    if (a->stdin_text[0]) {
        job.stdin_data = (char *)a->stdin_text;
        job.stdin_len = strlen(a->stdin_text);
    }
    job.files = a->inputs.items;
    job.n_files = a->inputs.n;
    job.submitted_ms = clock_wall_ms();
    jobspec_encode(&job, body);
}

/* The answer as execute_code's structuredContent has it, figures and files described. */
static json_t *s_structured(const result_t *r, const uint8_t id[ID_BYTES], const runfiles_t *files)
{
    char idstr[ID_STR_LEN + 1];
    id_format(id, idstr);
    json_t *s = result_to_json(r, idstr);
    json_t *images = json_array();
    for (size_t i = 0; i < r->n_images; i++)
        json_array_append_new(images, json_pack("{s:s, s:I, s:I, s:I}", "mime",
                                                r->images[i].mime ? r->images[i].mime : "image/png",
                                                "width", (json_int_t)r->images[i].width, "height",
                                                (json_int_t)r->images[i].height, "bytes",
                                                (json_int_t)r->images[i].len));
    json_object_set_new(s, "images", images);
    json_object_set_new(s, "files", runfiles_describe(files));
    json_t *trunc = json_object_get(s, "truncated");
    json_object_set_new(trunc, "images", json_boolean(r->images_truncated));
    json_object_set_new(trunc, "files", json_boolean(r->files_truncated));
    return s;
}

/* Shows the answer the broker gave; returns the exit status. */
static int s_show(const run_args_t *a, answer_t *w, const uint8_t id[ID_BYTES])
{
    if (!w->decoded) {
        fprintf(stderr, "snakepit run: bad answer from the farm: %s\n", w->err);
        return ST_INTERNAL_ERROR;
    }
    result_t *r = &w->res;
    runfiles_t figures = {0}, files = {0};
    runfiles_from_result(&figures, &files, r);
    json_t *o = a->validate && r->validation ? json_loads(r->validation, 0, NULL)
                                             : s_structured(r, id, &files);
    run_args_t shown = *a;
    shown.validate = a->validate && o && r->validation;
    int status = run_show(&shown, o ? o : json_object(), &figures, &files);
    json_decref(o);
    runfiles_clear(&figures);
    runfiles_clear(&files);
    result_clear(r);
    return status;
}

/* The client configuration, CURVE keys loaded into mine when the farm has them. */
static int s_conf(const run_args_t *a, const char *curve_key, const char *curve_cert,
                  client_conf_t *cc, char server_z85[CURVE_Z85_LEN + 1], curve_cert_t *mine)
{
    *cc = (client_conf_t){.endpoint = a->broker, .heartbeat_ms = 1000, .grace_ms = 5000};
    if (!curve_key[0]) return 0;
    char err[512];
    if (curve_key_resolve(curve_key, server_z85, err, sizeof err) < 0 ||
        curve_cert_load(curve_cert, mine, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit run: CURVE keys: %s\n", err);
        return -1;
    }
    cc->curve_server_key = server_z85;
    cc->curve_public_key = mine->public_key;
    cc->curve_secret_key = mine->secret_key;
    return 0;
}

int run_broker(const run_args_t *a, const char *curve_key, const char *curve_cert)
{
    const profile_t *prof = run_route(a);
    if (!prof) {
        fprintf(stderr, "snakepit run: unknown profile '%s'\n", a->profile);
        return RUN_EX_USAGE;
    }
    limits_t eff = {.wall_ms = a->timeout_s * 1000}; /* the deadline follows the wall limit */
    profile_apply_limits(prof, &eff);
    log_init("run", LOG_WARN);
    client_conf_t cc;
    char server_z85[CURVE_Z85_LEN + 1];
    curve_cert_t mine = {0};
    if (s_conf(a, curve_key, curve_cert, &cc, server_z85, &mine) < 0) return RUN_EX_USAGE;
    buf_t body;
    buf_init(&body);
    s_encode_job(a, prof, &body);
    void *ctx = zmq_ctx_new();
    loop_t *loop = loop_new();
    answer_t w = {0};
    client_t *cl = client_new(ctx, loop, &cc, s_event, &w);
    uint8_t id[ID_BYTES];
    id_new(id);
    route_t route = {.deadline_ms = clock_wall_ms() + (uint64_t)eff.wall_ms + DEADLINE_GRACE_MS};
    snprintf(route.tenant, sizeof route.tenant, "%s", a->tenant);
    uint64_t give_up = clock_mono_ms() + SUBMIT_MS;
    int sent = 0;
    while (!(sent = client_submit(cl, prof->name, id, &route, body.data, body.len) == 0) &&
           clock_mono_ms() < give_up)
        usleep(10000);
    int status = RUN_EX_UNREACHABLE;
    if (!sent) {
        fprintf(stderr, "snakepit run: cannot reach the broker at %s\n", a->broker);
    } else {
        loop_timer_add(loop, 20, 20, s_stop, &w);
        loop_run(loop);
        status = s_show(a, &w, id);
    }
    explicit_bzero(&mine, sizeof mine);
    buf_free(&body);
    client_destroy(&cl);
    loop_destroy(&loop);
    zmq_ctx_term(ctx);
    return status;
}
