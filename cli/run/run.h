/* cli/run/run.h — `snakepit run`, and `snakepit session run ID`: the same command whose first
 * argument that is not an option names the session (options may come before or after it). */
#ifndef SP_RUN_H
#define SP_RUN_H
int run_main(int argc, char **argv);
int run_session_main(int argc, char **argv);
#endif
