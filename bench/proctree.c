/* bench/proctree.c — see proctree.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proctree.h"

typedef struct {
    pid_t  pid, ppid;
    double cpu_s;  /* utime + stime + cutime + cstime */
    double minflt; /* minflt + cminflt */
} pstat_t;

static int s_read_stat(pid_t pid, pstat_t *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: the fields start after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p) return -1;
    char               state;
    int                ppid;
    unsigned long long ut, st, mf, cmf;
    long long          cut, cst;
    if (sscanf(p + 2, "%c %d %*d %*d %*d %*d %*u %llu %llu %*u %*u %llu %llu %lld %lld", &state,
               &ppid, &mf, &cmf, &ut, &st, &cut, &cst) != 8)
        return -1;
    out->minflt = (double)(mf + cmf);
    static long hz;
    if (!hz) hz = sysconf(_SC_CLK_TCK);
    out->pid = pid;
    out->ppid = ppid;
    out->cpu_s = (double)(ut + st + (unsigned long long)cut + (unsigned long long)cst) / (double)hz;
    return 0;
}

void proc_label(pid_t pid, char *out, size_t cap)
{
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, " ")] = '\0'; /* redis-server rewrites its argv into one line */
    const char *base = strrchr(buf, '/');
    snprintf(out, cap, "%s", base ? base + 1 : buf[0] ? buf : "?");
}

/* All processes, for walking the tree. */
static int s_all(pstat_t **out)
{
    DIR *d = opendir("/proc");
    if (!d) return -1;
    size_t   cap = 512, n = 0;
    pstat_t *v = malloc(cap * sizeof *v);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        char *end;
        long  pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        if (n == cap) {
            pstat_t *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) break;
            v = nv, cap *= 2;
        }
        if (s_read_stat((pid_t)pid, &v[n]) == 0) n++;
    }
    closedir(d);
    *out = v;
    return v ? (int)n : -1;
}

static void s_add(proctree_cpu_t *out, const char *label, double cpu_s, double minflt)
{
    int i = 0;
    while (i < out->n && strcmp(out->label[i], label) != 0) i++;
    if (i == out->n) {
        if (out->n == PROCTREE_MAX_LABELS) i = out->n - 1; /* lump the rest in the last */
        else snprintf(out->label[out->n++], sizeof out->label[0], "%s", label);
    }
    out->cpu_s[i] += cpu_s;
    out->minflt[i] += minflt;
    out->total_s += cpu_s;
}

int proctree_cpu(pid_t root, proctree_cpu_t *out)
{
    memset(out, 0, sizeof *out);
    pstat_t *all;
    int      n = s_all(&all);
    if (n < 0) return -1;
    /* breadth-first from root; labels inherit down from a zygote */
    pid_t *queue = malloc((size_t)(n + 1) * sizeof *queue);
    char (*labels)[32] = malloc((size_t)(n + 1) * sizeof *labels);
    int    head = 0, tail = 0, found = 0;
    queue[tail] = root;
    proc_label(root, labels[tail], sizeof labels[0]);
    tail++;
    while (head < tail) {
        pid_t pid = queue[head];
        char *label = labels[head];
        head++;
        for (int i = 0; i < n; i++) {
            if (all[i].pid == pid) {
                s_add(out, label, all[i].cpu_s, all[i].minflt);
                found |= pid == root;
            }
            if (all[i].ppid == pid && tail < n + 1) {
                queue[tail] = all[i].pid;
                if (strcmp(label, "snakepit-zygote") == 0) snprintf(labels[tail], 32, "%s", label);
                else proc_label(all[i].pid, labels[tail], sizeof labels[0]);
                tail++;
            }
        }
    }
    free(queue);
    free(labels);
    free(all);
    return found ? 0 : -1;
}

void proctree_cpu_json(char *out, size_t cap, const proctree_cpu_t *before,
                       const proctree_cpu_t *after, double answers)
{
    if (answers <= 0) answers = 1;
    size_t len = (size_t)snprintf(out, cap, ",\"cpu_ms_per_exec\":%.3f",
                                  (after->total_s - before->total_s) * 1000.0 / answers);
    for (int pass = 0; pass < 2 && len < cap; pass++) {
        len += (size_t)snprintf(out + len, cap - len, pass ? ",\"minflt_per_exec_by_process\":{"
                                                           : ",\"cpu_ms_by_process\":{");
        for (int i = 0; i < after->n && len < cap; i++) {
            double prev = 0;
            for (int k = 0; k < before->n; k++)
                if (strcmp(before->label[k], after->label[i]) == 0)
                    prev = pass ? before->minflt[k] : before->cpu_s[k];
            double now = pass ? after->minflt[i] : after->cpu_s[i] * 1000.0;
            len += (size_t)snprintf(out + len, cap - len, "%s\"%s\":%.3f", i ? "," : "",
                                    after->label[i], (now - (pass ? prev : prev * 1000.0)) / answers);
        }
        if (len < cap) len += (size_t)snprintf(out + len, cap - len, "}");
    }
}

int smaps_read(pid_t pid, smaps_t *out)
{
    memset(out, 0, sizeof *out);
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static const struct {
        const char *key;
        size_t      off;
    } keys[] = {
        {"Rss:", offsetof(smaps_t, rss_kb)},
        {"Pss:", offsetof(smaps_t, pss_kb)},
        {"Private_Dirty:", offsetof(smaps_t, private_dirty_kb)},
        {"Private_Clean:", offsetof(smaps_t, private_clean_kb)},
        {"Shared_Dirty:", offsetof(smaps_t, shared_dirty_kb)},
        {"Shared_Clean:", offsetof(smaps_t, shared_clean_kb)},
        {"Anonymous:", offsetof(smaps_t, anonymous_kb)},
    };
    while (fgets(line, sizeof line, f))
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (strncmp(line, keys[i].key, strlen(keys[i].key)) == 0)
                *(long *)((char *)out + keys[i].off) = atol(line + strlen(keys[i].key));
    fclose(f);
    return 0;
}

int proc_children(pid_t parent, pid_t *out, int max)
{
    pstat_t *all;
    int      n = s_all(&all), k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (all[i].ppid == parent) out[k++] = all[i].pid;
    free(all);
    return k;
}

long proc_syscall(pid_t pid)
{
    char path[64];
    long nr = -1;
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (fscanf(f, "%ld", &nr) != 1) nr = -1;
    fclose(f);
    return nr;
}
