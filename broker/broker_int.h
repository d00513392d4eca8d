/* broker/broker_int.h — the broker's state, shared by broker.c (messages), broker_setup.c
 * (sockets, timers, signals, shutdown) and metrics.c (what /metrics and Redis show). */
#ifndef SP_BROKER_INT_H
#define SP_BROKER_INT_H
#include <zmq.h>

#include "../common/buf.h"
#include "../common/loop.h"
#include "../common/metrics_http.h"
#include "../common/metrics_pub.h"
#include "broker.h"

#ifndef SNAKEPIT_VERSION
#define SNAKEPIT_VERSION "dev"
#endif

typedef struct {
    const char *kind; /* for the summary line */
    uint64_t window_ms;
    unsigned count;
    uint64_t suppressed;
} ratelog_t;

struct broker {
    broker_conf_t conf;
    loop_t *loop;
    void *ctx;
    void *clients;   /* ROUTER, client channel */
    void *executors; /* ROUTER, worker channel */
    sched_t *sched;
    zap_t *zap; /* NULL when CURVE is off */
    metrics_http_t *http;
    metrics_pub_t *pub;
    int sig_fd;
    buf_t scratch; /* route headers and broker-made Results, reused */
    broker_io_stats_t io;
    uint64_t refused[REFUSE__COUNT]; /* SUBMITs refused at admission, by reason */
    uint64_t rejected_malformed;     /* malformed SUBMITs answered REJECT */
    ratelog_t bad_log, reject_log;
    double started;        /* wall clock, seconds */
    char curve_public[41]; /* Z85, logged so operators can copy it */
    char curve_secret[41];
};

/* broker.c */
int s_ratelog(ratelog_t *r);
void s_ratelog_flush(ratelog_t *r);
int s_send(broker_t *b, channel_t ch, const uint8_t *identity, size_t id_len, const frame_t *head,
           int n, zmq_msg_t *body);
void s_worker_cmd(broker_t *b, const uint8_t *identity, size_t id_len, uint8_t cmd);
int s_io_send_job(void *arg, executor_t *ex, job_t *job);
void s_io_answer(void *arg, const job_t *job, status_t st, const char *type, const char *message);
void s_io_cancel(void *arg, executor_t *ex, const uint8_t id[ID_BYTES]);
void s_on_clients(loop_t *loop, short revents, void *arg);
void s_on_executors(loop_t *loop, short revents, void *arg);

/* metrics.c */
void broker_metrics_render(void *arg, buf_t *out);           /* metrics_render_fn */
void broker_metrics_snapshot(void *arg, metrics_pub_t *pub); /* metrics_pub_fill_fn */

#endif
