/* tests/unit/test_common.c — small common modules: ids, idmap, sha256, config, redis_url,
 * endpoint, profiles, result_json's UTF-8 repair. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/endpoint.h"
#include "common/idmap.h"
#include "common/ids.h"
#include "common/pep440.h"
#include "common/profiles.h"
#include "common/redis_url.h"
#include "common/sha256.h"
#include "proto/result_json.h"

static void test_uuid7_format_parse_and_version(void **state)
{
    (void)state;
    uint8_t id[ID_BYTES], back[ID_BYTES];
    char    s[ID_STR_LEN + 1];
    id_new(id);
    id_format(id, s);
    assert_int_equal(strlen(s), 36);
    assert_int_equal(s[14], '7'); /* version nibble */
    assert_true(strchr("89ab", s[19]) != NULL);
    assert_int_equal(id_parse(s, back), 0);
    assert_memory_equal(id, back, ID_BYTES);
    assert_int_equal(id_parse("not-a-uuid", back), -1);
    s[8] = 'x';
    assert_int_equal(id_parse(s, back), -1);
}

static void test_uuid7_ids_sort_by_creation(void **state)
{
    (void)state;
    uint8_t a[ID_BYTES], b[ID_BYTES];
    id_new(a);
    for (int i = 0; i < 1000; i++) {
        id_new(b);
        assert_true(memcmp(a, b, ID_BYTES) < 0);
        memcpy(a, b, ID_BYTES);
    }
}

static void test_idmap_put_get_delete_and_grow(void **state)
{
    (void)state;
    idmap_t *m = idmap_new();
    uint8_t  ids[5000][ID_BYTES];
    for (int i = 0; i < 5000; i++) {
        id_new(ids[i]);
        assert_int_equal(idmap_put(m, ids[i], (void *)(intptr_t)(i + 1)), 0);
    }
    assert_int_equal(idmap_put(m, ids[7], (void *)1), -1);
    assert_int_equal(idmap_size(m), 5000);
    for (int i = 0; i < 5000; i += 2) assert_true(idmap_del(m, ids[i]) == (void *)(intptr_t)(i + 1));
    for (int i = 1; i < 5000; i += 2) assert_true(idmap_get(m, ids[i]) == (void *)(intptr_t)(i + 1));
    assert_null(idmap_get(m, ids[0]));
    assert_int_equal(idmap_size(m), 2500);
    idmap_destroy(&m);
    assert_null(m);
}

static void test_sha256_known_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

typedef struct {
    char name[32];
    long n;
    int  flag;
    char list[64];
} conf_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(conf_t, name, "name", "S", "a name"),
    CFG_OPT_INT(conf_t, n, "n", 1, 10, "N", "a number"),
    CFG_OPT_BOOL(conf_t, flag, "flag", "a flag"),
    CFG_OPT_LIST(conf_t, list, "item", "X", "repeatable"),
    CFG_OPT_END,
};

static void test_config_flags_env_and_precedence(void **state)
{
    (void)state;
    conf_t c = {.n = 3};
    char   err[128];
    char  *argv[] = {"prog", "--name=x", "--item", "a", "--item", "b", "--flag", "pos", NULL};
    char  *rest[2];
    int    n_rest = 2;
    setenv("SNAKEPIT_N", "7", 1);
    setenv("SNAKEPIT_NAME", "from-env", 1);
    assert_int_equal(config_load(&c, s_opts, 8, argv, rest, &n_rest, err, sizeof err), CONFIG_OK);
    assert_string_equal(c.name, "x"); /* flag beats environment */
    assert_int_equal(c.n, 7);         /* environment beats default */
    assert_int_equal(c.flag, 1);
    assert_string_equal(c.list, "a,b");
    assert_int_equal(n_rest, 1);
    assert_string_equal(rest[0], "pos");
    unsetenv("SNAKEPIT_N");
    unsetenv("SNAKEPIT_NAME");
}

static void test_config_list_flag_replaces_the_default(void **state)
{
    (void)state;
    conf_t c = {0};
    snprintf(c.list, sizeof c.list, "default");
    char  err[128];
    char *a1[] = {"prog", "--item", "x", NULL};
    assert_int_equal(config_load(&c, s_opts, 3, a1, NULL, NULL, err, sizeof err), CONFIG_OK);
    assert_string_equal(c.list, "x");
    char *a2[] = {"prog", "--item", "x", "--item=y", NULL};
    snprintf(c.list, sizeof c.list, "default");
    assert_int_equal(config_load(&c, s_opts, 4, a2, NULL, NULL, err, sizeof err), CONFIG_OK);
    assert_string_equal(c.list, "x,y");
}

static void test_config_rejects_out_of_range_and_unknown(void **state)
{
    (void)state;
    conf_t c = {0};
    char   err[128];
    char  *a1[] = {"prog", "--n", "11", NULL};
    assert_int_equal(config_load(&c, s_opts, 3, a1, NULL, NULL, err, sizeof err), CONFIG_ERROR);
    assert_non_null(strstr(err, "outside 1..10"));
    char *a2[] = {"prog", "--bogus", NULL};
    assert_int_equal(config_load(&c, s_opts, 2, a2, NULL, NULL, err, sizeof err), CONFIG_ERROR);
    assert_non_null(strstr(err, "unknown flag"));
    char *a3[] = {"prog", "--help", NULL};
    assert_int_equal(config_load(&c, s_opts, 2, a3, NULL, NULL, err, sizeof err), CONFIG_HELP);
}

static const cfg_short_t s_shorts[] = {{'n', "n"}, {'i', "item"}, {'f', "flag"}, CFG_SHORT_END};

static void test_config_short_flags_take_attached_or_next_values(void **state)
{
    (void)state;
    conf_t c = {0};
    char   err[128];
    char  *argv[] = {"prog", "-n5", "-i", "a", "-ib", "-f", NULL};
    assert_int_equal(config_load_short(&c, s_opts, s_shorts, 6, argv, NULL, NULL, err, sizeof err),
                     CONFIG_OK);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.list, "a,b");
    assert_int_equal(c.flag, 1);
}

static void test_config_short_flags_are_checked_like_long_ones(void **state)
{
    (void)state;
    conf_t c = {0};
    char   err[128];
    char  *a1[] = {"prog", "-n11", NULL};
    assert_int_equal(config_load_short(&c, s_opts, s_shorts, 2, a1, NULL, NULL, err, sizeof err),
                     CONFIG_ERROR);
    assert_non_null(strstr(err, "outside 1..10"));
    char *a2[] = {"prog", "-x", NULL};
    assert_int_equal(config_load_short(&c, s_opts, s_shorts, 2, a2, NULL, NULL, err, sizeof err),
                     CONFIG_ERROR);
    assert_non_null(strstr(err, "unknown flag '-x'"));
    char *a3[] = {"prog", "-fyes", NULL}; /* a bool's letter takes no value */
    assert_int_equal(config_load_short(&c, s_opts, s_shorts, 2, a3, NULL, NULL, err, sizeof err),
                     CONFIG_ERROR);
    char *a4[] = {"prog", "-n", NULL};
    assert_int_equal(config_load_short(&c, s_opts, s_shorts, 2, a4, NULL, NULL, err, sizeof err),
                     CONFIG_ERROR);
    assert_non_null(strstr(err, "needs a value"));
    char *a5[] = {"prog", "-n3", NULL}; /* without the table, letters mean nothing */
    assert_int_equal(config_load(&c, s_opts, 2, a5, NULL, NULL, err, sizeof err), CONFIG_ERROR);
}

static int s_workspace_only(const profile_t *p, void *arg)
{
    (void)arg;
    return p->workspace;
}

static void test_dependencies_route_to_the_first_profile_that_has_them_all(void **state)
{
    (void)state;
    const char *numpy[] = {"numpy", "pandas"}, *learn[] = {"scikit-learn", "pillow"},
               *paths[] = {"pathlib"}, *none[] = {"nosuchpkg"};
    assert_string_equal(profile_for_dependencies(numpy, 2, NULL, NULL)->name, "python.data_science");
    /* distribution names too */
    assert_string_equal(profile_for_dependencies(learn, 2, NULL, NULL)->name, "python.data_science");
    /* pathlib is in every profile: keep() decides */
    assert_string_equal(profile_for_dependencies(paths, 1, NULL, NULL)->name, "python.basic");
    assert_string_equal(profile_for_dependencies(paths, 1, s_workspace_only, NULL)->name,
                        "python.filesystem");
    assert_null(profile_for_dependencies(none, 1, NULL, NULL));
    assert_ptr_equal(profile_for_dependencies(NULL, 0, NULL, NULL), profile_default());
}

static void test_redis_urls(void **state)
{
    (void)state;
    redis_url_t u;
    char        err[256];
    assert_int_equal(redis_url_parse("redis://user:pw@db.local:6380/2", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "db.local");
    assert_int_equal(u.port, 6380);
    assert_string_equal(u.user, "user");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.db, 2);
    assert_int_equal(redis_url_parse("unix:///run/r.sock?db=3", &u, err, sizeof err), 0);
    assert_string_equal(u.path, "/run/r.sock");
    assert_int_equal(u.db, 3);
    assert_int_equal(redis_url_parse("redis://host:99999", &u, err, sizeof err), -1);
    assert_int_equal(redis_url_parse("http://x", &u, err, sizeof err), -1);
    assert_int_equal(redis_url_parse("unix:relative.sock", &u, err, sizeof err), -1);
}

static void test_only_endpoints_on_this_machine_are_local(void **state)
{
    (void)state;
    assert_true(endpoint_is_local("ipc:///run/snakepit/clients.sock"));
    assert_true(endpoint_is_local("inproc://zeromq.zap.01"));
    assert_true(endpoint_is_local("tcp://127.0.0.1:5555"));
    assert_true(endpoint_is_local("tcp://localhost:5555"));
    assert_true(endpoint_is_local("tcp://[::1]:5555"));
    assert_false(endpoint_is_local("tcp://0.0.0.0:5556"));
    assert_false(endpoint_is_local("tcp://10.0.0.1:5556"));
    assert_false(endpoint_is_local("tcp://localhost.example.com:5556"));
    assert_false(endpoint_is_local("tcp://128.0.0.1:5556"));
}

static void test_profile_limits_are_clamped(void **state)
{
    (void)state;
    const profile_t *p = profile_find("python.basic");
    assert_non_null(p);
    limits_t l = {.wall_ms = 10 * 60 * 1000, .memory_mb = 0};
    profile_apply_limits(p, &l);
    assert_int_equal(l.wall_ms, p->max.wall_ms);
    assert_int_equal(l.memory_mb, p->defaults.memory_mb);
    assert_true(profile_allows(p, "xml.etree.ElementTree"));
    assert_true(profile_allows(p, "math"));
    assert_true(profile_allows(p, "os")); /* ordinary modules import; operations are policed */
    assert_false(profile_allows(p, "ctypes"));
    assert_false(profile_allows(p, "mathx"));
    assert_null(profile_find("python.nope"));
}

static void test_distributions_route_by_their_import_names(void **state)
{
    (void)state;
    const profile_t *ds = profile_find("python.data_science");
    const profile_t *basic = profile_find("python.basic");
    char buf[64];
    assert_string_equal(profile_dist_module("scikit-learn", buf, sizeof buf), "sklearn");
    assert_string_equal(profile_dist_module("Pillow", buf, sizeof buf), "PIL");
    assert_string_equal(profile_dist_module("PyYAML", buf, sizeof buf), "yaml");
    assert_string_equal(profile_dist_module("Foo.Bar_baz", buf, sizeof buf), "foo_bar_baz");
    assert_true(profile_provides(ds, "scikit-learn"));
    assert_true(profile_provides(ds, "pillow"));
    assert_true(profile_provides(ds, "beautifulsoup4"));
    assert_true(profile_provides(ds, "python_dateutil"));
    assert_true(profile_provides(ds, "numpy"));
    assert_false(profile_provides(basic, "scikit-learn"));
    assert_false(profile_provides(ds, "tinypkg"));
}

static void test_requirements_met_by_installed_packages(void **state)
{
    (void)state;
    const char *pkgs = "{\"numpy\": \"1.24.2\", \"pandas\": \"1.5.3\", \"scikit-learn\": \"1.2.1\"}";
    char *met[] = {"numpy>=1.20", "pandas", "scikit_learn (>=1,<2)", "NumPy==1.24.*",
                   "pandas[excel] ; python_version>'3'", "numpy~=1.24.0"};
    assert_true(pep440_all_met(pkgs, met, 6));
    char *unmet[][1] = {{"numpy>=2"}, {"tinypkg"}, {"pandas!=1.5.3"}, {"numpy==1.23.*"},
                        {"numpy~=1.25"}, {"numpy>=garbage"}};
    for (size_t i = 0; i < 6; i++) assert_false(pep440_all_met(pkgs, unmet[i], 1));
    assert_true(pep440_all_met(pkgs, NULL, 0));
}

static void test_invalid_utf8_becomes_replacement_chars(void **state)
{
    (void)state;
    /* "é" cut in half by an output cap, plus an overlong '/' */
    json_t *s = json_utf8_string("ok \xc3", 4);
    assert_string_equal(json_string_value(s), "ok \xef\xbf\xbd");
    json_decref(s);
    s = json_utf8_string("\xc0\xaf", 2);
    assert_string_equal(json_string_value(s), "\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(s);
    s = json_utf8_string("caf\xc3\xa9", 5);
    assert_string_equal(json_string_value(s), "caf\xc3\xa9");
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid7_format_parse_and_version),
        cmocka_unit_test(test_uuid7_ids_sort_by_creation),
        cmocka_unit_test(test_idmap_put_get_delete_and_grow),
        cmocka_unit_test(test_sha256_known_vectors),
        cmocka_unit_test(test_config_flags_env_and_precedence),
        cmocka_unit_test(test_config_list_flag_replaces_the_default),
        cmocka_unit_test(test_config_rejects_out_of_range_and_unknown),
        cmocka_unit_test(test_config_short_flags_take_attached_or_next_values),
        cmocka_unit_test(test_config_short_flags_are_checked_like_long_ones),
        cmocka_unit_test(test_dependencies_route_to_the_first_profile_that_has_them_all),
        cmocka_unit_test(test_redis_urls),
        cmocka_unit_test(test_only_endpoints_on_this_machine_are_local),
        cmocka_unit_test(test_profile_limits_are_clamped),
        cmocka_unit_test(test_distributions_route_by_their_import_names),
        cmocka_unit_test(test_requirements_met_by_installed_packages),
        cmocka_unit_test(test_invalid_utf8_becomes_replacement_chars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
