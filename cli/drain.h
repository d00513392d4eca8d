/* cli/drain.h — `snakepit drain --executor HOST:PORT`: asks an executor node to drain (POST /drain
 * on its metrics listener, which answers only peers on its own machine): it tells its brokers
 * it is leaving, takes no new job, lets its running jobs finish within its --drain-grace-s and
 * exits. The same as sending it SIGTERM, for when the process is not at hand (a container). */
#ifndef SP_DRAIN_H
#define SP_DRAIN_H
int drain_main(int argc, char **argv);
#endif
