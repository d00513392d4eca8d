/* cli/down.h — `snakepit down`: stops the farm a state directory's `snakepit up` runs (also
 * the one `snakepit mcp --stdio` started in the background), by the pids it recorded there
 * (farm.h: FARM_LOCK_FILE, FARM_PIDS_FILE), never by name. */
#ifndef SP_DOWN_H
#define SP_DOWN_H
int down_main(int argc, char **argv);
#endif
