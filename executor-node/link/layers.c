/* executor-node/link/layers.c — see layers.h. */
#include <stdio.h>
#include <string.h>

#include "layers.h"

static const struct {
    const char *name;
    unsigned    bit;
} s_layer_names[] = {
    {"rlimits", LAYER_RLIMITS}, {"namespaces", LAYER_NAMESPACES}, {"landlock", LAYER_LANDLOCK},
    {"uid", LAYER_UID},         {"nnp", LAYER_NNP},               {"seccomp", LAYER_SECCOMP},
    {"python", LAYER_PYTHON},
};

int sandbox_layers_parse(const char *list, unsigned *bits, char *err, size_t errlen)
{
    *bits = 0;
    const char *p = list;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        int    found = 0;
        for (size_t i = 0; i < sizeof s_layer_names / sizeof s_layer_names[0]; i++)
            if (strlen(s_layer_names[i].name) == len && strncmp(p, s_layer_names[i].name, len) == 0) {
                *bits |= s_layer_names[i].bit;
                found = 1;
            }
        if (!found && len) {
            snprintf(err, errlen, "unknown sandbox layer '%.*s' (known: rlimits, namespaces, "
                                  "landlock, uid, nnp, seccomp, python)", (int)len, p);
            return -1;
        }
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

void sandbox_layers_format(unsigned bits, char *out, size_t cap)
{
    size_t j = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof s_layer_names / sizeof s_layer_names[0]; i++)
        if (bits & s_layer_names[i].bit)
            j += (size_t)snprintf(out + j, j < cap ? cap - j : 0, "%s%s", j ? "," : "", s_layer_names[i].name);
}
