/* cli/session.h — `snakepit session`. */
#ifndef SP_SESSION_H
#define SP_SESSION_H
int session_main(int argc, char **argv);
#endif
