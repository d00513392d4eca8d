/* cli/up.h — `snakepit up`, the embedded default farm. */
#ifndef SP_UP_H
#define SP_UP_H
int up_main(int argc, char **argv);
#endif
