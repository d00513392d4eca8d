/* cli/keygen.h — `snakepit keygen NAME`: a CURVE key pair for a broker, an executor node or a
 * front-end, as two ZPL certificate files (common/curve_cert.h). See broker/README.md for
 * how the files travel between machines. */
#ifndef SP_KEYGEN_H
#define SP_KEYGEN_H

/* argv[0] is "keygen". Returns the process exit status. */
int keygen_main(int argc, char **argv);

#endif
