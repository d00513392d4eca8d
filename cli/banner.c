/* cli/banner.c — see banner.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "banner.h"

/* The executor endpoint as other machines reach it: a bind address (0.0.0.0) becomes this
 * host's name. */
static void s_reachable(const char *endpoint, char *out, size_t cap)
{
    snprintf(out, cap, "%s", endpoint);
    char *any = strstr(out, "://0.0.0.0:");
    if (!any) return;
    char host[256] = "THIS-HOST";
    gethostname(host, sizeof host - 1);
    char tail[64];
    snprintf(tail, sizeof tail, "%s", any + 10);
    snprintf(any + 3, cap - (size_t)(any + 3 - out), "%s%s", host, tail);
}

static void s_print_hub(const farm_info_t *f, const char *keys, long broker_pid)
{
    char reach[PATH_MAX + 64];
    s_reachable(f->executors, reach, sizeof reach);
    printf("Executors on other machines (CURVE; this broker admits the keys in %s/allowed/):\n"
           "  on each machine:  snakepit keygen --dir /etc/snakepit/keys exec-NAME\n"
           "  copy its exec-NAME.key here into %s/allowed/, then:  kill -HUP %d  (the broker "
           "reloads)\n"
           "  copy %s/broker.key there, and run:\n"
           "  snakepit-executor --broker %s --curve-server-key broker.key \\\n"
           "      --curve-secret-file /etc/snakepit/keys/exec-NAME.key_secret\n\n",
           keys, keys, (int)broker_pid, keys, reach);
}

void banner_print(const farm_info_t *f, const char *keys_dir, long broker_pid)
{
    /* the console is served beside /mcp by the same front-end (docs/console.md) */
    char console[600];
    size_t base = strlen(f->url) >= 4 && !strcmp(f->url + strlen(f->url) - 4, "/mcp")
                      ? strlen(f->url) - 4
                      : strlen(f->url);
    snprintf(console, sizeof console, "%.*s/console", (int)base, f->url);
    printf("\nsnakepit is up.\n\n"
           "  MCP endpoint   %s\n"
           "  console        %s  (sign in with the API key)\n"
           "  API key        %s\n"
           "  state & logs   %s\n"
           "  metrics        %s (broker), %s (executor), %s (front-end)\n\n",
           f->url, console, f->api_key, f->state_dir, f->metrics[FARM_METRICS_BROKER],
           f->metrics[FARM_METRICS_EXECUTOR], f->metrics[FARM_METRICS_MCP]);
    if (f->remote_url[0])
        printf("  other machines %s%s\n\n", f->remote_url,
               strncmp(f->remote_url, "https:", 6) ? "  (plain HTTP: --allow-remote)" : "");
    if (f->metrics[FARM_METRICS_BROKER2][0])
        printf("  second broker  %s (clients), %s (metrics)\n\n", strchr(f->brokers, ',') + 1,
               f->metrics[FARM_METRICS_BROKER2]);
    printf("MCP client configuration (Streamable HTTP):\n"
           "  {\"mcpServers\": {\"snakepit\": {\"type\": \"http\", \"url\": \"%s\",\n"
           "    \"headers\": {\"Authorization\": \"Bearer %s\"}}}}\n\n",
           f->url, f->api_key);
    printf("MCP client configuration (stdio, e.g. Claude Desktop):\n"
           "  {\"mcpServers\": {\"snakepit\": {\"command\": \"%s\",\n"
           "    \"args\": [\"mcp\", \"--stdio\", \"--state-dir\", \"%s\"]}}}\n\n",
           f->snakepit, f->state_dir);
    if (keys_dir) s_print_hub(f, keys_dir, broker_pid);
    printf("Try it:  %s run 'print(1+1)'\n\nCtrl-C stops the farm.\n", f->snakepit);
    fflush(stdout);
}
