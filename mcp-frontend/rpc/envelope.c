/* mcp-frontend/rpc/envelope.c — see envelope.h. */
#include <stdio.h>
#include <string.h>

#include "envelope.h"
#include "loglevel.h"

static const char *const s_modern[] = {MCP_MODERN, NULL};
static const char *const s_legacy[] = {MCP_LEGACY, "2025-06-18", "2025-03-26", "2024-11-05", NULL};

static int s_in(const char *const *list, const char *v)
{
    for (int i = 0; v && list[i]; i++)
        if (strcmp(v, list[i]) == 0) return 1;
    return 0;
}

int envelope_modern_supported(const char *version)
{
    return s_in(s_modern, version);
}

int envelope_legacy_supported(const char *version)
{
    return s_in(s_legacy, version);
}

int envelope_names_modern(const char *version)
{
    return version && strcmp(version, MCP_MODERN) >= 0;
}

/* server/discover's supportedVersions and -32022's data.supported are the same list (the
 * conformance suite checks that the second is within the first): the versions a request can
 * name in its envelope. Legacy versions are reached through initialize, not per request. */
json_t *envelope_supported_json(void)
{
    json_t *a = json_array();
    for (int i = 0; s_modern[i]; i++) json_array_append_new(a, json_string(s_modern[i]));
    return a;
}

const char *envelope_legacy_list(void)
{
    return "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05";
}

static envelope_status_t s_bad(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "invalid request metadata: %s", what);
    return ENVELOPE_INVALID;
}

/* Implementation: name and version are required strings (schema.ts Implementation). */
static int s_implementation_ok(const json_t *v)
{
    return json_is_object(v) && json_is_string(json_object_get(v, "name")) &&
           json_is_string(json_object_get(v, "version"));
}

envelope_status_t envelope_parse(const json_t *params, envelope_t *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    out->log_level = LOGLEVEL_NONE;
    json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
    json_t *claim = json_is_object(meta) ? json_object_get(meta, META_PROTOCOL_VERSION) : NULL;
    if (!claim) return ENVELOPE_NONE;
    if (!json_is_string(claim) || !json_string_length(claim))
        return s_bad(why, whylen, "_meta[\"" META_PROTOCOL_VERSION "\"] must be a string");
    out->version = json_string_value(claim);
    out->caps = json_object_get(meta, META_CLIENT_CAPS);
    if (!out->caps)
        return s_bad(why, whylen,
                     "_meta[\"" META_CLIENT_CAPS "\"] is required ({} declares no capability)");
    if (!json_is_object(out->caps))
        return s_bad(why, whylen, "_meta[\"" META_CLIENT_CAPS "\"] must be an object");
    out->client_info = json_object_get(meta, META_CLIENT_INFO);
    if (out->client_info && !s_implementation_ok(out->client_info))
        return s_bad(why, whylen,
                     "_meta[\"" META_CLIENT_INFO "\"] must be an object with name and version");
    json_t *level = json_object_get(meta, META_LOG_LEVEL);
    if (level) {
        out->log_level = loglevel_parse(json_string_value(level));
        if (out->log_level < 0)
            return s_bad(why, whylen,
                         "_meta[\"" META_LOG_LEVEL "\"] must be one of debug, info, notice, "
                         "warning, error, critical, alert, emergency");
    }
    return ENVELOPE_OK;
}

int envelope_has_cap(const json_t *caps, const char *name)
{
    return json_is_object(json_object_get(caps, name));
}

int envelope_has_extension(const json_t *caps, const char *id)
{
    return json_is_object(json_object_get(json_object_get(caps, "extensions"), id));
}
