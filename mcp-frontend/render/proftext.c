/* mcp-frontend/render/proftext.c — see proftext.h. */
#include <string.h>

#include "common/profiles.h"
#include "proftext.h"

static int s_has_figures(const profile_t *p)
{
    return p->figures;
}

static void s_join(buf_t *out, int (*keep)(const profile_t *))
{
    char names[1024];
    profiles_join(names, sizeof names, ", ", keep);
    buf_puts(out, names);
}

static void s_default(buf_t *out)
{
    buf_puts(out, profile_default()->name);
}

static void s_all(buf_t *out)
{
    s_join(out, NULL);
}

static void s_workspace(buf_t *out)
{
    s_join(out, profile_has_workspace);
}

static void s_figures(buf_t *out)
{
    s_join(out, s_has_figures);
}

static void s_summaries(buf_t *out)
{
    const profile_t *def = profile_default();
    for (size_t i = 0; i < n_profiles; i++)
        buf_printf(out, "%s%s%s: %s", i ? ". " : "", profiles[i].name,
                   &profiles[i] == def ? " (default)" : "", profiles[i].summary);
}

static void s_timeouts(buf_t *out)
{
    const profile_t *def = profile_default();
    buf_printf(out, "%ld s", def->defaults.wall_ms / 1000);
    for (size_t i = 0; i < n_profiles; i++)
        if (profiles[i].defaults.wall_ms != def->defaults.wall_ms)
            buf_printf(out, "; %ld s in %s", profiles[i].defaults.wall_ms / 1000, profiles[i].name);
}

static const struct {
    const char *name;
    void (*write)(buf_t *out);
} s_placeholders[] = {
    {"{default_profile}", s_default},      {"{profiles}", s_all},
    {"{workspace_profiles}", s_workspace}, {"{figures_profiles}", s_figures},
    {"{profile_summaries}", s_summaries},  {"{default_timeouts}", s_timeouts},
};

/* The placeholder at p ("{name}"): its length, with its text appended to out; 0 if none. */
static size_t s_placeholder(buf_t *out, const char *p)
{
    for (size_t i = 0; i < sizeof s_placeholders / sizeof s_placeholders[0]; i++) {
        size_t n = strlen(s_placeholders[i].name);
        if (strncmp(p, s_placeholders[i].name, n) == 0) {
            s_placeholders[i].write(out);
            return n;
        }
    }
    return 0;
}

void proftext_expand(buf_t *out, const char *template)
{
    for (const char *p = template; *p;) {
        const char *brace = strchr(p, '{');
        if (!brace) {
            buf_puts(out, p);
            return;
        }
        buf_append(out, p, (size_t)(brace - p));
        size_t n = s_placeholder(out, brace);
        if (!n) buf_append(out, brace, 1);
        p = brace + (n ? n : 1);
    }
}

char *proftext(const char *template)
{
    buf_t b;
    buf_init(&b);
    proftext_expand(&b, template);
    return buf_steal(&b, NULL);
}
