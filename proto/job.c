/* proto/job.c — JobSpec encoding and hostile-input decoding (PROTOCOL.md §4). Unknown keys
 * are skipped so that newer senders can add fields; a wrong type or an over-cap value makes
 * the whole body malformed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "mpack.h"

static const char *const s_kinds[JOB__KINDS] = {
    [JOB_EXEC] = "exec",
    [JOB_VALIDATE] = "validate",
    [JOB_SESSION_NEW] = "session_new",
    [JOB_SESSION_FORK] = "session_fork",
    [JOB_SESSION_CLOSE] = "session_close",
    [JOB_SESSION_SNAPSHOT] = "session_snapshot",
    [JOB_SESSION_RESTORE] = "session_restore",
    [JOB_SESSION_INFO] = "session_info",
};

const char *job_kind_name(job_kind_t kind)
{
    return (unsigned)kind < JOB__KINDS ? s_kinds[kind] : NULL;
}

int job_kind_is_session(job_kind_t kind)
{
    return kind >= JOB_SESSION_NEW && kind < JOB__KINDS;
}

void jobspec_init(jobspec_t *job)
{
    memset(job, 0, sizeof *job);
    job->capture_output = 1;
}

static void s_free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

void jobspec_free_names(char **names, size_t n)
{
    s_free_names(names, n);
}

void jobspec_free_egress(job_egress_t *e)
{
    s_free_names(e->rules, e->n_rules);
    memset(e, 0, sizeof *e);
}

void jobspec_clear(jobspec_t *job)
{
    free(job->tenant);
    free(job->service);
    free(job->code);
    free(job->stdin_data);
    free(job->snapshot);
    s_free_names(job->inspect, job->n_inspect);
    s_free_names(job->allowed_imports, job->n_allowed_imports);
    s_free_names(job->dependencies, job->n_dependencies);
    free(job->more_sessions);
    jobspec_free_egress(&job->egress);
    for (size_t i = 0; i < job->n_files; i++) {
        free(job->files[i].path);
        free(job->files[i].data);
    }
    free(job->files);
    jobspec_init(job);
}

static void s_write_names(mpw_t *w, const char *key, char **names, size_t n)
{
    mpw_str(w, key);
    mpw_array(w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) mpw_str(w, names[i]);
}

void jobspec_encode(const jobspec_t *job, buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    uint32_t extra = (uint32_t)(job->has_session + job->has_new_session +
                                (job->idle_timeout_s > 0) + (job->snapshot != NULL) +
                                (job->figure_format != FIGURES_PNG) + (job->n_dependencies > 0) +
                                (job->atomic != 0) + (job->n_more_sessions > 0) +
                                (job->retention_s > 0) + (job->resume_cells > 0) +
                                (job->egress.n_rules > 0));
    mpw_map(&w, 13 + extra);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "kind", job_kind_name(job->kind) ? job_kind_name(job->kind) : "exec");
    mpw_kv_str(&w, "tenant", job->tenant ? job->tenant : "");
    mpw_kv_str(&w, "service", job->service ? job->service : "");
    mpw_str(&w, "code");
    mpw_strn(&w, job->code ? job->code : "", job->code ? job->code_len : 0);
    mpw_str(&w, "limits");
    mpw_map(&w, 5);
    mpw_kv_int(&w, "wall_ms", job->limits.wall_ms);
    mpw_kv_int(&w, "cpu_ms", job->limits.cpu_ms);
    mpw_kv_int(&w, "memory_mb", job->limits.memory_mb);
    mpw_kv_int(&w, "output_bytes", job->limits.output_bytes);
    mpw_kv_int(&w, "nofile", job->limits.nofile);
    s_write_names(&w, "inspect", job->inspect, job->n_inspect);
    s_write_names(&w, "allowed_imports", job->allowed_imports, job->n_allowed_imports);
    mpw_str(&w, "stdin");
    if (job->stdin_data)
        mpw_strn(&w, job->stdin_data, job->stdin_len);
    else
        mpw_nil(&w);
    mpw_kv_bool(&w, "capture_output", job->capture_output);
    mpw_str(&w, "files");
    mpw_array(&w, (uint32_t)job->n_files);
    for (size_t i = 0; i < job->n_files; i++) {
        mpw_map(&w, 2);
        mpw_kv_str(&w, "path", job->files[i].path);
        mpw_str(&w, "data");
        mpw_bin(&w, job->files[i].data, job->files[i].len);
    }
    mpw_kv_uint(&w, "submitted_ms", job->submitted_ms);
    mpw_kv_uint(&w, "attempt", 0); /* reserved; the broker's header carries the real one */
    if (job->figure_format != FIGURES_PNG) mpw_kv_str(&w, "figure_format", "svg");
    if (job->n_dependencies) s_write_names(&w, "dependencies", job->dependencies, job->n_dependencies);
    if (job->egress.n_rules) {
        mpw_str(&w, "egress");
        mpw_map(&w, 3);
        s_write_names(&w, "rules", job->egress.rules, job->egress.n_rules);
        mpw_kv_uint(&w, "max_bytes", job->egress.max_bytes);
        mpw_kv_uint(&w, "max_conns", job->egress.max_conns);
    }
    if (job->has_session) {
        mpw_str(&w, "session");
        mpw_bin(&w, job->session, ID_BYTES);
    }
    if (job->has_new_session) {
        mpw_str(&w, "new_session");
        mpw_bin(&w, job->new_session, ID_BYTES);
    }
    if (job->idle_timeout_s > 0) mpw_kv_uint(&w, "idle_timeout_s", (uint64_t)job->idle_timeout_s);
    if (job->snapshot) {
        mpw_str(&w, "snapshot");
        mpw_bin(&w, job->snapshot, job->snapshot_len);
    }
    if (job->atomic) mpw_kv_bool(&w, "atomic", 1);
    if (job->n_more_sessions) {
        mpw_str(&w, "more_sessions");
        mpw_array(&w, (uint32_t)job->n_more_sessions);
        for (size_t i = 0; i < job->n_more_sessions; i++) mpw_bin(&w, job->more_sessions[i], ID_BYTES);
    }
    if (job->retention_s > 0) mpw_kv_uint(&w, "retention_s", (uint64_t)job->retention_s);
    if (job->resume_cells > 0) mpw_kv_uint(&w, "resume_cells", job->resume_cells);
}

/* more_sessions: 16-byte ids, at most JOB_MAX_FORKS - 1 of them. */
static int s_read_more_sessions(mpr_t *r, jobspec_t *job)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return -1;
    if (n > JOB_MAX_FORKS - 1) return mpr_fail(r, "too many sessions for one fork");
    job->more_sessions = xcalloc(n ? n : 1, ID_BYTES);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const uint8_t *b;
        uint32_t len;
        if (mpr_bytes(r, &b, &len) < 0) return -1;
        if (len != ID_BYTES) return mpr_fail(r, "a session id is not 16 bytes");
        memcpy(job->more_sessions[i], b, ID_BYTES);
        job->n_more_sessions++;
    }
    return r->err ? -1 : 0;
}

/* A 16-byte id (bin): the has flag is set once it is read. */
static void s_read_id(mpr_t *r, uint8_t out[ID_BYTES], int *has)
{
    const uint8_t *b;
    uint32_t len;
    if (mpr_bytes(r, &b, &len) < 0) return;
    if (len != ID_BYTES) {
        mpr_fail(r, "a session id is not 16 bytes");
        return;
    }
    memcpy(out, b, ID_BYTES);
    *has = 1;
}

/* What each kind needs of the session fields; NULL when the JobSpec has it. */
static const char *s_session_fields(const jobspec_t *job)
{
    if (job->atomic && (job->kind != JOB_EXEC || !job->has_session))
        return "atomic on a job that is not a session's cell";
    if (job->n_more_sessions && job->kind != JOB_SESSION_FORK)
        return "more_sessions on a job that is not a session_fork";
    for (size_t i = 0; i < job->n_more_sessions; i++) {
        if (!memcmp(job->more_sessions[i], job->new_session, ID_BYTES))
            return "more_sessions repeats new_session";
        for (size_t j = 0; j < i; j++)
            if (!memcmp(job->more_sessions[i], job->more_sessions[j], ID_BYTES))
                return "more_sessions names a session twice";
    }
    switch (job->kind) {
    case JOB_EXEC:
    case JOB_VALIDATE:
        return job->has_new_session ? "new_session on a job that makes no session" : NULL;
    case JOB_SESSION_NEW:
        return !job->has_new_session || job->has_session ? "session_new needs new_session only"
                                                         : NULL;
    case JOB_SESSION_FORK:
        return !job->has_new_session || !job->has_session
                   ? "session_fork needs session and new_session"
                   : NULL;
    case JOB_SESSION_RESTORE:
        if (!job->snapshot) return "session_restore without a snapshot";
        return job->has_session == job->has_new_session
                   ? "session_restore needs either session or new_session"
                   : NULL;
    default:
        return !job->has_session || job->has_new_session ? "a session job needs session only"
                                                         : NULL;
    }
}

static int s_read_strings(mpr_t *r, char ***names, size_t *n, uint32_t max, uint32_t max_len)
{
    uint32_t count;
    if (mpr_array(r, &count) < 0) return -1;
    if (count > max) return mpr_fail(r, "too many names");
    *names = xcalloc(count ? count : 1, sizeof **names);
    for (uint32_t i = 0; i < count; i++) {
        if (mpr_strdup(r, max_len, &(*names)[i]) < 0) return -1;
        if (!(*names)[i]) return mpr_fail(r, "name is nil");
        (*n)++;
    }
    return 0;
}

static int s_read_names(mpr_t *r, char ***names, size_t *n)
{
    return s_read_strings(r, names, n, JOB_MAX_NAMES, JOB_MAX_NAME);
}

/* `egress`: the rules, each one a rule an operator could have stored (a JobSpec may come from
 * any client of the broker, and the node hands them to the egress process as they are), and
 * the caps. */
static int s_read_egress(mpr_t *r, job_egress_t *e)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return -1;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(r, &k, &kl) < 0) return -1;
        if (mpr_key_is(k, kl, "rules") && !e->rules) {
            if (s_read_strings(r, &e->rules, &e->n_rules, EGRESS_MAX_RULES, EGRESS_MAX_RULE) < 0)
                return -1;
            for (size_t j = 0; j < e->n_rules; j++) {
                egress_rule_t rule;
                char why[160];
                if (egress_rule_parse(e->rules[j], strlen(e->rules[j]), &rule, why, sizeof why) < 0)
                    return mpr_fail(r, "an egress rule is not valid");
            }
        } else if (mpr_key_is(k, kl, "max_bytes")) {
            if (mpr_uint(r, &e->max_bytes) == 0 && e->max_bytes > JOB_MAX_EGRESS_BYTES)
                return mpr_fail(r, "egress max_bytes out of range");
        } else if (mpr_key_is(k, kl, "max_conns")) {
            if (mpr_uint(r, &e->max_conns) == 0 && e->max_conns > JOB_MAX_EGRESS_CONNS)
                return mpr_fail(r, "egress max_conns out of range");
        } else {
            mpr_skip(r);
        }
    }
    return r->err ? -1 : 0;
}

static int s_read_limit(mpr_t *r, long *out)
{
    int64_t v;
    if (mpr_int(r, &v) < 0) return -1;
    if (v < 0 || v > (int64_t)1 << 40) return mpr_fail(r, "limit out of range");
    *out = (long)v;
    return 0;
}

static int s_read_limits(mpr_t *r, limits_t *l)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(r, &k, &kl) < 0) return -1;
        if (mpr_key_is(k, kl, "wall_ms")) s_read_limit(r, &l->wall_ms);
        else if (mpr_key_is(k, kl, "cpu_ms")) s_read_limit(r, &l->cpu_ms);
        else if (mpr_key_is(k, kl, "memory_mb")) s_read_limit(r, &l->memory_mb);
        else if (mpr_key_is(k, kl, "output_bytes")) s_read_limit(r, &l->output_bytes);
        else if (mpr_key_is(k, kl, "nofile")) s_read_limit(r, &l->nofile);
        else mpr_skip(r);
    }
    return r->err ? -1 : 0;
}

static int s_read_files(mpr_t *r, jobspec_t *job)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return -1;
    if (n > JOB_MAX_FILES) return mpr_fail(r, "too many files");
    job->files = xcalloc(n ? n : 1, sizeof *job->files);
    for (uint32_t i = 0; i < n; i++) {
        job_file_t *f = &job->files[job->n_files++];
        uint32_t    m;
        if (mpr_map(r, &m) < 0) return -1;
        for (uint32_t j = 0; j < m; j++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(r, &k, &kl) < 0) return -1;
            if (mpr_key_is(k, kl, "path")) {
                free(f->path);
                mpr_strdup(r, JOB_MAX_PATH, &f->path);
            } else if (mpr_key_is(k, kl, "data")) {
                free(f->data);
                mpr_bytesdup(r, JOB_MAX_FILE, &f->data, &f->len);
            } else {
                mpr_skip(r);
            }
        }
        if (!r->err && !f->path) return mpr_fail(r, "file without path");
        if (!f->data) f->data = xstrdup("");
    }
    return r->err ? -1 : 0;
}

int jobspec_decode(const void *data, size_t len, jobspec_t *job, char *err, size_t errlen)
{
    mpr_t    r;
    uint32_t n;
    uint64_t version = 0;
    jobspec_init(job);
    mpr_init(&r, data, len);
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v")) {
                mpr_uint(&r, &version);
            } else if (mpr_key_is(k, kl, "kind")) {
                const char *v;
                uint32_t    vl;
                if (mpr_str(&r, &v, &vl) == 0) {
                    int found = 0;
                    for (int kind = 0; kind < JOB__KINDS && !found; kind++)
                        if (mpr_key_is(v, vl, s_kinds[kind])) job->kind = kind, found = 1;
                    if (!found) mpr_fail(&r, "unknown job kind");
                }
            } else if (mpr_key_is(k, kl, "tenant")) {
                free(job->tenant);
                mpr_strdup(&r, JOB_MAX_TENANT, &job->tenant);
            } else if (mpr_key_is(k, kl, "service")) {
                free(job->service);
                mpr_strdup(&r, JOB_MAX_SERVICE, &job->service);
            } else if (mpr_key_is(k, kl, "code")) {
                free(job->code);
                mpr_bytesdup(&r, JOB_MAX_CODE, &job->code, &job->code_len);
            } else if (mpr_key_is(k, kl, "limits")) {
                s_read_limits(&r, &job->limits);
            } else if (mpr_key_is(k, kl, "inspect") && !job->inspect) {
                s_read_names(&r, &job->inspect, &job->n_inspect);
            } else if (mpr_key_is(k, kl, "allowed_imports") && !job->allowed_imports) {
                s_read_names(&r, &job->allowed_imports, &job->n_allowed_imports);
            } else if (mpr_key_is(k, kl, "stdin")) {
                free(job->stdin_data);
                mpr_bytesdup(&r, JOB_MAX_STDIN, &job->stdin_data, &job->stdin_len);
            } else if (mpr_key_is(k, kl, "capture_output")) {
                mpr_bool(&r, &job->capture_output);
            } else if (mpr_key_is(k, kl, "files") && !job->files) {
                s_read_files(&r, job);
            } else if (mpr_key_is(k, kl, "submitted_ms")) {
                mpr_uint(&r, &job->submitted_ms);
            } else if (mpr_key_is(k, kl, "session")) {
                s_read_id(&r, job->session, &job->has_session);
            } else if (mpr_key_is(k, kl, "new_session")) {
                s_read_id(&r, job->new_session, &job->has_new_session);
            } else if (mpr_key_is(k, kl, "idle_timeout_s")) {
                uint64_t t = 0;
                if (mpr_uint(&r, &t) == 0 && t > (uint64_t)JOB_MAX_IDLE_S)
                    mpr_fail(&r, "idle_timeout_s out of range");
                job->idle_timeout_s = (long)t;
            } else if (mpr_key_is(k, kl, "snapshot") && !job->snapshot) {
                mpr_bytesdup(&r, JOB_MAX_SNAPSHOT, &job->snapshot, &job->snapshot_len);
            } else if (mpr_key_is(k, kl, "figure_format")) {
                const char *v;
                uint32_t    vl;
                if (mpr_str(&r, &v, &vl) == 0) {
                    if (mpr_key_is(v, vl, "svg")) job->figure_format = FIGURES_SVG;
                    else if (mpr_key_is(v, vl, "png")) job->figure_format = FIGURES_PNG;
                    else mpr_fail(&r, "unknown figure_format");
                }
            } else if (mpr_key_is(k, kl, "atomic")) {
                mpr_bool(&r, &job->atomic);
            } else if (mpr_key_is(k, kl, "more_sessions") && !job->more_sessions) {
                s_read_more_sessions(&r, job);
            } else if (mpr_key_is(k, kl, "retention_s")) {
                uint64_t t = 0;
                if (mpr_uint(&r, &t) == 0 && t > (uint64_t)JOB_MAX_RETENTION_S)
                    mpr_fail(&r, "retention_s out of range");
                job->retention_s = (long)t;
            } else if (mpr_key_is(k, kl, "resume_cells")) {
                uint64_t c = 0;
                if (mpr_uint(&r, &c) == 0 && c > UINT32_MAX) mpr_fail(&r, "resume_cells out of range");
                job->resume_cells = (uint32_t)c;
            } else if (mpr_key_is(k, kl, "dependencies") && !job->dependencies) {
                s_read_strings(&r, &job->dependencies, &job->n_dependencies, JOB_MAX_DEPS,
                               JOB_MAX_DEP);
            } else if (mpr_key_is(k, kl, "egress") && !job->egress.rules) {
                s_read_egress(&r, &job->egress);
            } else {
                mpr_skip(&r);
            }
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes after JobSpec";
    if (!why && version != 1) why = "unsupported JobSpec version";
    if (!why && !job->code) why = "JobSpec without code";
    if (!why && (!job->tenant || !job->service)) why = "JobSpec without tenant or service";
    if (!why) why = s_session_fields(job);
    if (why) {
        snprintf(err, errlen, "%s", why);
        jobspec_clear(job);
        return -1;
    }
    return 0;
}

int jobspec_peek_dependencies(const void *data, size_t len, char ***out, size_t *n)
{
    mpr_t    r;
    uint32_t count;
    *out = NULL;
    *n = 0;
    mpr_init(&r, data, len);
    if (mpr_map(&r, &count) < 0) return -1;
    for (uint32_t i = 0; i < count && !r.err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(&r, &k, &kl) < 0) break;
        if (mpr_key_is(k, kl, "dependencies") && !*out)
            s_read_strings(&r, out, n, JOB_MAX_DEPS, JOB_MAX_DEP);
        else
            mpr_skip(&r);
    }
    if (!r.err) return 0;
    s_free_names(*out, *n);
    *out = NULL;
    *n = 0;
    return -1;
}

int jobspec_peek_egress(const void *data, size_t len, job_egress_t *out)
{
    mpr_t    r;
    uint32_t count;
    memset(out, 0, sizeof *out);
    mpr_init(&r, data, len);
    if (mpr_map(&r, &count) < 0) return -1;
    for (uint32_t i = 0; i < count && !r.err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(&r, &k, &kl) < 0) break;
        if (mpr_key_is(k, kl, "egress") && !out->rules)
            s_read_egress(&r, out);
        else
            mpr_skip(&r);
    }
    if (!r.err) return 0;
    jobspec_free_egress(out);
    return -1;
}

int jobspec_check_path(const char *path, char *err, size_t errlen)
{
    size_t len = path ? strlen(path) : 0;
    if (!len) return snprintf(err, errlen, "a file path is empty"), -1;
    if (len > JOB_MAX_PATH)
        return snprintf(err, errlen, "file path is longer than %u bytes", JOB_MAX_PATH), -1;
    if (path[0] == '/')
        return snprintf(err, errlen, "file path '%.100s' is absolute; give a path relative to the "
                        "workspace", path), -1;
    for (const char *c = path; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
            return snprintf(err, errlen, "file path '%.100s' contains a control character or a "
                            "backslash", path), -1;
    int depth = 0;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.'))
            return snprintf(err, errlen, "file path '%.100s' has an empty or '.' component", path), -1;
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return snprintf(err, errlen, "file path '%.100s' leaves the workspace ('..')", path), -1;
        if (n > 255) return snprintf(err, errlen, "a component of '%.100s' is too long", path), -1;
        if (++depth > JOB_MAX_DEPTH)
            return snprintf(err, errlen, "file path '%.100s' is nested more than %d deep", path,
                            JOB_MAX_DEPTH), -1;
        p += n;
        if (*p == '/' && !p[1])
            return snprintf(err, errlen, "file path '%.100s' ends with '/'", path), -1;
        if (*p) p++;
    }
    return 0;
}
