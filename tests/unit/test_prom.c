/* tests/unit/test_prom.c — the shared pieces the broker brought to common/: the Prometheus
 * text writer (prom.h), HOST:PORT splitting (metrics_http.h) and CURVE key files
 * (curve_cert.h). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>

#include "common/curve_cert.h"
#include "common/metrics_http.h"
#include "common/prom.h"

static void test_samples_escape_label_values(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    prom_family(&b, "x_total", PROM_COUNTER, "Help with \\ and\nnewline.");
    prom_sample(&b, "x_total", 3, "a", "q\"uote", "b", "back\\slash\nnl", NULL);
    prom_sample(&b, "x_total", 0.25, NULL);
    assert_string_equal((char *)b.data, "# HELP x_total Help with \\\\ and\\nnewline.\n"
                                        "# TYPE x_total counter\n"
                                        "x_total{a=\"q\\\"uote\",b=\"back\\\\slash\\nnl\"} 3\n"
                                        "x_total 0.25\n");
    buf_free(&b);
}

static void test_histogram_is_cumulative_with_inf_sum_and_count(void **state)
{
    (void)state;
    static const double bounds[] = {0.1, 1};
    prom_hist_t h;
    prom_hist_init(&h, bounds, 2);
    prom_hist_observe(&h, 0.05);
    prom_hist_observe(&h, 0.1); /* a bound is inclusive: le="0.1" */
    prom_hist_observe(&h, 0.5);
    prom_hist_observe(&h, 7);
    buf_t b;
    buf_init(&b);
    const char *labels[] = {"service", "s", NULL};
    prom_hist_write(&b, "w_seconds", &h, labels);
    assert_string_equal((char *)b.data, "w_seconds_bucket{service=\"s\",le=\"0.1\"} 2\n"
                                        "w_seconds_bucket{service=\"s\",le=\"1\"} 3\n"
                                        "w_seconds_bucket{service=\"s\",le=\"+Inf\"} 4\n"
                                        "w_seconds_sum{service=\"s\"} 7.6500000000000004\n"
                                        "w_seconds_count{service=\"s\"} 4\n");
    buf_free(&b);
}

static void test_listen_addresses_split(void **state)
{
    (void)state;
    char host[64];
    int port;
    assert_int_equal(metrics_http_split("127.0.0.1:9101", host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9101);
    assert_int_equal(metrics_http_split("[::1]:0", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    assert_int_equal(metrics_http_split(":80", host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(metrics_http_split("nohost", host, sizeof host, &port), -1);
    assert_int_equal(metrics_http_split("h:99999", host, sizeof host, &port), -1);
    assert_int_equal(metrics_http_split("h:", host, sizeof host, &port), -1);
    assert_int_equal(metrics_http_split("[::1]9", host, sizeof host, &port), -1);
}

static void test_key_files_round_trip_and_secret_is_private(void **state)
{
    (void)state;
    char dir[] = "/tmp/sp-cert-XXXXXX", pub[64], sec[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(pub, sizeof pub, "%s/n.key", dir);
    snprintf(sec, sizeof sec, "%s/n.key_secret", dir);
    curve_cert_t c = {.name = "n"}, back;
    assert_int_equal(zmq_curve_keypair(c.public_key, c.secret_key), 0);
    assert_int_equal(curve_cert_save(sec, &c, 1, 0, err, sizeof err), 0);
    assert_int_equal(curve_cert_save(pub, &c, 0, 0, err, sizeof err), 0);
    assert_int_equal(curve_cert_save(sec, &c, 1, 0, err, sizeof err), -1); /* no overwrite */
    struct stat st;
    assert_int_equal(stat(sec, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(curve_cert_load(sec, &back, err, sizeof err), 0);
    assert_string_equal(back.public_key, c.public_key);
    assert_string_equal(back.secret_key, c.secret_key);
    assert_string_equal(back.name, "n");
    assert_int_equal(curve_cert_load(pub, &back, err, sizeof err), 0);
    assert_string_equal(back.secret_key, "");
    char key[41];
    assert_int_equal(curve_key_resolve(c.public_key, key, err, sizeof err), 0);
    assert_string_equal(key, c.public_key);
    assert_int_equal(curve_key_resolve(pub, key, err, sizeof err), 0);
    assert_string_equal(key, c.public_key);
    FILE *f = fopen(pub, "w"); /* a bare key is a public certificate too */
    fprintf(f, "%s\n", c.public_key);
    fclose(f);
    assert_int_equal(curve_cert_load(pub, &back, err, sizeof err), 0);
    assert_string_equal(back.public_key, c.public_key);
    f = fopen(pub, "w");
    fprintf(f, "curve\n    public-key = \"not a key\"\n");
    fclose(f);
    assert_int_equal(curve_cert_load(pub, &back, err, sizeof err), -1);
    assert_non_null(strstr(err, "Z85"));
    unlink(pub), unlink(sec), rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_escape_label_values),
        cmocka_unit_test(test_histogram_is_cumulative_with_inf_sum_and_count),
        cmocka_unit_test(test_listen_addresses_split),
        cmocka_unit_test(test_key_files_round_trip_and_secret_is_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
