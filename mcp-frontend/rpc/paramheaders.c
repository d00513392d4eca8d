/* mcp-frontend/rpc/paramheaders.c — see paramheaders.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "paramheaders.h"
#include "reqheaders.h"

#define HEADER_PREFIX "Mcp-Param-"
#define MAX_DECLS     32 /* a tool with more mirrored arguments than this is refused */
#define MAX_NAME      64 /* our bound on the name part, so a header name fits a small buffer */
#define MAX_DEPTH     64 /* schemas nested deeper are refused rather than walked */
#define SAFE_INT      9007199254740991LL /* 2^53 - 1: integers a JavaScript client can carry */

typedef struct {
    char header[sizeof HEADER_PREFIX + MAX_NAME]; /* "Mcp-Param-<name>" */
    char type;                                    /* 's'tring, 'i'nteger, 'b'oolean */
    json_t *path; /* the property names from the root to the argument */
} decl_t;

struct paramheaders {
    decl_t decls[MAX_DECLS];
    size_t n;
};

/* ---- scanning an inputSchema */

/* Keywords whose subschemas are not reached through "properties" alone: an annotation under one
 * of them is invalid (server/tools §"x-mcp-header": statically reachable properties only). */
static const char *const s_unreachable[] = {"items",
                                            "prefixItems",
                                            "contains",
                                            "additionalProperties",
                                            "unevaluatedProperties",
                                            "unevaluatedItems",
                                            "propertyNames",
                                            "patternProperties",
                                            "dependentSchemas",
                                            "dependencies",
                                            "additionalItems",
                                            "oneOf",
                                            "anyOf",
                                            "allOf",
                                            "not",
                                            "if",
                                            "then",
                                            "else",
                                            "$defs",
                                            "definitions",
                                            NULL};

/* Those whose value is an object of subschemas by name, rather than a subschema. */
static int s_named_schemas(const char *keyword)
{
    return !strcmp(keyword, "patternProperties") || !strcmp(keyword, "dependentSchemas") ||
           !strcmp(keyword, "dependencies") || !strcmp(keyword, "$defs") ||
           !strcmp(keyword, "definitions");
}

/* RFC 9110 §5.1 tchar: a header name's characters (no space, control, or delimiter). */
static int s_token(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return 0;
    return 1;
}

typedef struct {
    paramheaders_t *out;
    char *err;
    size_t errlen;
} scan_t;

static int s_broken(scan_t *s, const json_t *path, const char *what)
{
    char *p = json_dumps(path, JSON_COMPACT);
    snprintf(s->err, s->errlen, "x-mcp-header at %s: %s", p ? p : "?", what);
    free(p);
    return -1;
}

static int s_declare(scan_t *s, const json_t *node, const json_t *path, int reachable)
{
    const json_t *name = json_object_get(node, "x-mcp-header");
    if (!reachable || !json_array_size(path))
        return s_broken(s, path,
                        "only properties reached from the root through \"properties\" "
                        "may be mirrored (not items, composition, conditionals or $ref)");
    const char *v = json_string_value(name);
    if (!v || !s_token(v))
        return s_broken(s, path, "the header name must be a non-empty RFC 9110 token");
    if (strlen(v) > MAX_NAME) return s_broken(s, path, "the header name is too long");
    const char *type = json_string_value(json_object_get(node, "type"));
    char t = !type                      ? 0
             : !strcmp(type, "string")  ? 's'
             : !strcmp(type, "integer") ? 'i'
             : !strcmp(type, "boolean") ? 'b'
                                        : 0;
    if (!t) return s_broken(s, path, "only string, integer and boolean properties may be mirrored");
    paramheaders_t *ph = s->out;
    for (size_t i = 0; i < ph->n; i++)
        if (!strcasecmp(ph->decls[i].header + strlen(HEADER_PREFIX), v))
            return s_broken(s, path, "the header name is not unique (case-insensitively)");
    if (ph->n == MAX_DECLS) return s_broken(s, path, "too many mirrored arguments");
    decl_t *d = &ph->decls[ph->n++];
    snprintf(d->header, sizeof d->header, HEADER_PREFIX "%s", v);
    d->type = t;
    d->path = json_deep_copy(path);
    return 0;
}

static int s_visit(scan_t *s, const json_t *node, json_t *path, int reachable);

static int s_visit_child(scan_t *s, const json_t *child, json_t *path, const char *step,
                         int reachable)
{
    json_array_append_new(path, json_string(step));
    int rc = s_visit(s, child, path, reachable);
    json_array_remove(path, json_array_size(path) - 1);
    return rc;
}

/* Under a keyword that leaves the properties chain: every subschema, none reachable. */
static int s_visit_unreachable(scan_t *s, const char *keyword, const json_t *sub, json_t *path)
{
    char step[40];
    snprintf(step, sizeof step, "<%s>", keyword);
    if (json_is_array(sub)) {
        size_t i;
        const json_t *v;
        json_array_foreach(sub, i, v) if (s_visit_child(s, v, path, step, 0) < 0) return -1;
        return 0;
    }
    if (json_is_object(sub) && s_named_schemas(keyword)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)sub, k,
                            v) if (s_visit_child(s, v, path, step, 0) < 0) return -1;
        return 0;
    }
    return s_visit_child(s, sub, path, step, 0);
}

static int s_visit(scan_t *s, const json_t *node, json_t *path, int reachable)
{
    if (!json_is_object(node)) return 0;
    if (json_array_size(path) > MAX_DEPTH) return s_broken(s, path, "the schema nests too deeply");
    if (json_object_get(node, "x-mcp-header") && s_declare(s, node, path, reachable) < 0) return -1;
    const json_t *props = json_object_get(node, "properties");
    if (json_is_object(props)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)props, k, v)
        {
            if (s_visit_child(s, v, path, k, reachable) < 0) return -1;
        }
    }
    for (int i = 0; s_unreachable[i]; i++) {
        const json_t *sub = json_object_get(node, s_unreachable[i]);
        if (sub && s_visit_unreachable(s, s_unreachable[i], sub, path) < 0) return -1;
    }
    return 0;
}

paramheaders_t *paramheaders_scan(const json_t *input_schema, char *err, size_t errlen)
{
    if (errlen) err[0] = '\0';
    scan_t s = {xcalloc(1, sizeof(paramheaders_t)), err, errlen};
    json_t *path = json_array();
    int rc = s_visit(&s, input_schema, path, 1);
    json_decref(path);
    if (rc < 0 || !s.out->n) paramheaders_destroy(&s.out);
    return s.out;
}

void paramheaders_destroy(paramheaders_t **self_p)
{
    paramheaders_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < self->n; i++) json_decref(self->decls[i].path);
    free(self);
    *self_p = NULL;
}

size_t paramheaders_count(const paramheaders_t *self)
{
    return self ? self->n : 0;
}

const char *paramheaders_name(const paramheaders_t *self, size_t i)
{
    return i < paramheaders_count(self) ? self->decls[i].header : NULL;
}

/* ---- checking a call */

static const json_t *s_at(const json_t *args, const json_t *path)
{
    size_t i;
    const json_t *step;
    json_array_foreach(path, i, step)
    {
        if (!json_is_object(args)) return NULL;
        args = json_object_get(args, json_string_value(step));
    }
    return args;
}

/* The body value as the client must have written it (streamable-http §"Value Encoding": strings
 * as they are, integers in decimal, booleans lowercase). 0, or -1 when nothing is expected: a
 * null or absent value, an integer no client can carry exactly, a value of a type no header
 * mirrors (the argument checks refuse that one). */
static int s_body_text(const json_t *v, buf_t *out)
{
    if (json_is_string(v)) {
        buf_append(out, json_string_value(v), json_string_length(v));
        return 0;
    }
    if (json_is_boolean(v)) {
        buf_puts(out, json_is_true(v) ? "true" : "false");
        return 0;
    }
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n > SAFE_INT || n < -SAFE_INT) return -1;
        buf_printf(out, "%lld", (long long)n);
        return 0;
    }
    if (json_is_real(v)) {
        buf_printf(out, "%.17g", json_real_value(v));
        return 0;
    }
    return -1;
}

/* -?digits(.digits)? — a header integers are compared to numerically ("42.0" equals 42); the
 * buffer's bytes are NUL-terminated (buf.h), so strtod reads exactly them. */
static int s_decimal(const char *s, size_t n)
{
    if (!n) return 0;
    size_t i = s[0] == '-' ? 1 : 0, digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (!digits) return 0;
    if (i < n && s[i] == '.') {
        size_t frac = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == frac) return 0;
    }
    return i == n;
}

static int s_equal(const decl_t *d, const json_t *v, const buf_t *header, const buf_t *body)
{
    if (d->type == 'i' && json_is_number(v) && s_decimal((const char *)header->data, header->len))
        return strtod((const char *)header->data, NULL) == json_number_value(v);
    return header->len == body->len && !memcmp(header->data, body->data, body->len);
}

static int s_mismatch(char *why, size_t whylen, const char *fmt, const char *header)
{
    char what[200];
    snprintf(what, sizeof what, fmt, header);
    snprintf(why, whylen, "Header mismatch: %s", what);
    return -1;
}

int paramheaders_check(const paramheaders_t *self, const json_t *arguments,
                       paramheaders_lookup_fn *lookup, void *ctx, char *why, size_t whylen)
{
    for (size_t i = 0; i < paramheaders_count(self); i++) {
        const decl_t *d = &self->decls[i];
        const json_t *v = s_at(arguments, d->path);
        buf_t body, header;
        buf_init(&body);
        buf_init(&header);
        int rc = 0;
        if (v && !json_is_null(v) && s_body_text(v, &body) == 0) {
            const char *raw = lookup(ctx, d->header);
            if (!raw)
                rc =
                    s_mismatch(why, whylen,
                               "the %s header is required: its argument is in the body", d->header);
            else if (reqheaders_value(raw, 1, &header) < 0)
                rc = s_mismatch(why, whylen,
                                "the %s header holds characters a header value may not, or "
                                "malformed Base64",
                                d->header);
            else if (!s_equal(d, v, &header, &body))
                rc = s_mismatch(why, whylen,
                                "the %s header does not match its argument in the body", d->header);
        }
        buf_free(&body);
        buf_free(&header);
        if (rc < 0) return -1;
    }
    return 0;
}
