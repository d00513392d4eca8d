/* mcp-frontend/render/proftext.c — see proftext.h. */
#include <stdio.h>
#include <string.h>

#include "proftext.h"

/* The process's one view of what the farm serves: set by farm/served.c, read by every text. */
static uint32_t s_served;
static unsigned s_generation;

void proftext_serve(uint32_t mask)
{
    if (mask == s_served) return;
    s_served = mask;
    s_generation++;
}

uint32_t proftext_served(void)
{
    return s_served;
}

unsigned proftext_generation(void)
{
    return s_generation;
}

int proftext_is_served(const profile_t *p)
{
    size_t i = (size_t)(p - profiles);
    return !s_served || (i < n_profiles && i < 32 && (s_served >> i) & 1u);
}

const profile_t *proftext_default(void)
{
    for (size_t i = 0; i < n_profiles; i++)
        if (proftext_is_served(&profiles[i])) return &profiles[i];
    return profile_default();
}

void proftext_join(char *out, size_t outlen, const char *sep, int (*keep)(const profile_t *))
{
    size_t n = 0, count = 0;
    if (!outlen) return;
    out[0] = '\0';
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        if (!proftext_is_served(p) || (keep && !keep(p))) continue;
        int w = snprintf(out + n, n < outlen ? outlen - n : 0, "%s%s", count++ ? sep : "", p->name);
        if (w > 0) n += (size_t)w;
    }
    if (!count) snprintf(out, outlen, "none on this farm");
}

static int s_has_figures(const profile_t *p)
{
    return p->figures;
}

static void s_join(buf_t *out, int (*keep)(const profile_t *))
{
    char names[1024];
    proftext_join(names, sizeof names, ", ", keep);
    buf_puts(out, names);
}

static void s_default(buf_t *out)
{
    buf_puts(out, proftext_default()->name);
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
    const profile_t *def = proftext_default();
    int first = 1;
    for (size_t i = 0; i < n_profiles; i++) {
        if (!proftext_is_served(&profiles[i])) continue;
        buf_printf(out, "%s%s%s: %s", first ? "" : ". ", profiles[i].name,
                   &profiles[i] == def ? " (default)" : "", profiles[i].summary);
        first = 0;
    }
}

static void s_timeouts(buf_t *out)
{
    const profile_t *def = proftext_default();
    buf_printf(out, "%ld s", def->defaults.wall_ms / 1000);
    for (size_t i = 0; i < n_profiles; i++)
        if (proftext_is_served(&profiles[i]) &&
            profiles[i].defaults.wall_ms != def->defaults.wall_ms)
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
