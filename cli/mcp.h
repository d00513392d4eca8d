/* cli/mcp.h — `snakepit mcp --stdio`. */
#ifndef SP_CLI_MCP_H
#define SP_CLI_MCP_H
int mcp_main(int argc, char **argv);
#endif
