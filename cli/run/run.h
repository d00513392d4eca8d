/* cli/run/run.h — `snakepit run`. */
#ifndef SP_RUN_H
#define SP_RUN_H
int run_main(int argc, char **argv);
#endif
