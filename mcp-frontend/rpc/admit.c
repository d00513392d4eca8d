/* mcp-frontend/rpc/admit.c — see admit.h. */
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "admit.h"
#include "paramheaders.h"

static admit_t s_refuse(admit_stats_t *stats, admission_t *out, const rpc_msg_t *m,
                        const char *transport, admit_refusal_t why, int code, const char *message,
                        json_t *data)
{
    stats->refused[why]++;
    char q[300];
    log_info("event=message_rejected transport=%s era=modern reason=%s code=%d method=%.60s why=%s",
             transport, admit_refusal_name(why), code, m->method ? m->method : "-",
             log_quote(q, sizeof q, message));
    /* notifications get the error without an id (they have none): streamable-http
     * §"Sending Messages" lets a refused notification carry one */
    out->error = rpc_error(m->id, code, message, data);
    out->status = 400;
    return ADMIT_REFUSED;
}

/* The header's value with optional whitespace trimmed, for telling eras apart. */
static int s_header_names_modern(const char *raw)
{
    if (!raw) return 0;
    buf_t v;
    buf_init(&v);
    int modern =
        reqheaders_value(raw, 0, &v) == 0 && v.len && envelope_names_modern((char *)v.data);
    buf_free(&v);
    return modern;
}

admit_t admit_message(admit_stats_t *stats, const rpc_msg_t *m, const reqheaders_t *h,
                      const char *transport, admission_t *out)
{
    memset(out, 0, sizeof *out);
    if (m->kind == RPC_RESPONSE) { /* only legacy sessions answer server requests */
        stats->legacy++;
        return ADMIT_LEGACY;
    }
    char why[300];
    envelope_status_t st = envelope_parse(m->params, &out->env, why, sizeof why);
    if (st == ENVELOPE_NONE) {
        if (h && s_header_names_modern(h->protocol_version) && m->kind == RPC_REQUEST)
            return s_refuse(stats, out, m, transport, REFUSED_INVALID_META, RPC_INVALID_PARAMS,
                            "invalid request metadata: the request is missing the required "
                            "_meta fields \"" META_PROTOCOL_VERSION "\" and \"" META_CLIENT_CAPS
                            "\" (MCP 2026-07-28 has no initialize)",
                            NULL);
        if (h && s_header_names_modern(h->protocol_version)) { /* a modern notification */
            stats->modern++;
            return ADMIT_MODERN;
        }
        stats->legacy++;
        return ADMIT_LEGACY;
    }
    /* headers against the body first: what a proxy routed on must be what is served */
    const char *claim = out->env.version;
    if (h && claim && m->kind == RPC_REQUEST &&
        reqheaders_mismatch(h, m->method, claim, why, sizeof why) < 0)
        return s_refuse(stats, out, m, transport, REFUSED_HEADER_MISMATCH, RPC_HEADER_MISMATCH, why,
                        NULL);
    if (st == ENVELOPE_INVALID)
        return s_refuse(stats, out, m, transport, REFUSED_INVALID_META, RPC_INVALID_PARAMS, why,
                        NULL);
    if (!envelope_modern_supported(claim)) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "Unsupported protocol version: %.40s (supported: " MCP_MODERN
                 " per request; %s through initialize)",
                 claim, envelope_legacy_list());
        return s_refuse(
            stats, out, m, transport, REFUSED_UNSUPPORTED_VERSION, RPC_UNSUPPORTED_VERSION, msg,
            json_pack("{s:o,s:s}", "supported", envelope_supported_json(), "requested", claim));
    }
    if (h && m->kind == RPC_REQUEST &&
        reqheaders_required(h, m->method, m->params, why, sizeof why) < 0)
        return s_refuse(stats, out, m, transport, REFUSED_HEADER_MISMATCH, RPC_HEADER_MISMATCH, why,
                        NULL);
    /* the arguments a tool mirrors into Mcp-Param-* headers (paramheaders.h) */
    if (h && h->mirrors && m->kind == RPC_REQUEST && !strcmp(m->method, "tools/call") &&
        paramheaders_check(h->mirrors, json_object_get(m->params, "arguments"), h->lookup,
                           h->lookup_ctx, why, sizeof why) < 0)
        return s_refuse(stats, out, m, transport, REFUSED_HEADER_MISMATCH, RPC_HEADER_MISMATCH, why,
                        NULL);
    stats->modern++;
    return ADMIT_MODERN;
}

const char *admit_refusal_name(admit_refusal_t r)
{
    static const char *const names[REFUSED__COUNT] = {
        [REFUSED_INVALID_META] = "invalid_meta",
        [REFUSED_HEADER_MISMATCH] = "header_mismatch",
        [REFUSED_UNSUPPORTED_VERSION] = "unsupported_version",
    };
    return names[r];
}
