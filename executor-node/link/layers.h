/* executor-node/link/layers.h — the sandbox layers by name, shared by the node (which parses
 * --disable-layer and reports the active layers to the broker) and the zygote (which applies
 * them). See sandbox.h for what each layer does. */
#ifndef SP_LAYERS_H
#define SP_LAYERS_H
#include <stddef.h>

enum {
    LAYER_RLIMITS = 1 << 0,
    LAYER_NAMESPACES = 1 << 1,
    LAYER_LANDLOCK = 1 << 2,
    LAYER_UID = 1 << 3,
    LAYER_NNP = 1 << 4,
    LAYER_SECCOMP = 1 << 5,
    LAYER_PYTHON = 1 << 6, /* import allowlist + audit hook */
    LAYER_ALL = (1 << 7) - 1,
};

/* "seccomp,landlock" → bits; 0, or -1 naming the unknown layer in err. */
int  sandbox_layers_parse(const char *list, unsigned *bits, char *err, size_t errlen);
/* bits → "rlimits,namespaces,..." */
void sandbox_layers_format(unsigned bits, char *out, size_t cap);

#endif
