"""`snakepit tenant`: every verb and flag, quotas checked before they are stored, and what a
tenant's quotas do to its runs."""
import json

import pytest

from clilib import EX_UNAVAILABLE, EX_USAGE, snakepit


def tenant(env, *args):
    return snakepit("tenant", *args, env=env)


def show(env, name):
    r = tenant(env, "show", name, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_add_stores_every_quota_and_prints_a_key_once(env, farm):
    r = tenant(env, "add", "t-all", "--rate", "5/s", "--burst", "10", "--max-concurrency", "4",
               "--max-timeout", "60", "--max-memory", "512", "--profiles", "python.basic")
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip()
    assert key.startswith("sp_") and len(key) == 67 and "shown only once" in r.stderr
    t = show(env, "t-all")
    assert (t["rate"], t["burst"], t["max_concurrency"], t["max_timeout_s"], t["max_memory_mb"],
            t["profiles"]) == ("5", "10", "4", "60", "512", "python.basic")
    assert key not in json.dumps(t)  # only its hash is stored, and not shown
    ok = snakepit("run", "--key", key, "print(1)", env=env)
    assert ok.returncode == 0, ok.stderr
    other = snakepit("run", "--key", key, "--profile", "python.data_science", "print(1)", env=env)
    assert other.returncode == EX_USAGE and "not enabled" in other.stderr


@pytest.mark.parametrize("args,says", [
    (["--profiles", "python.nosuch"], "no profile 'python.nosuch'"),
    (["--profiles", "python.basic,python.nosuch"], "no profile 'python.nosuch'"),
    (["--rate", "0"], "--rate"),
    (["--rate", "fast"], "--rate"),
    (["--max-timeout", "3600"], "at most 300 s"),
    (["--max-memory", "4096", "--profiles", "python.basic"], "at most 2048 MB"),
    (["--max-memory", "8"], "--max-memory"),
    (["--burst", "0"], "--burst"),
    (["--max-concurrency", "-1"], "--max-concurrency"),
])
def test_add_refuses_quotas_that_cannot_work(env, args, says):
    r = tenant(env, "add", "t-bad", *args)
    assert r.returncode == EX_USAGE and says in r.stderr, r.stderr
    assert tenant(env, "show", "t-bad").returncode == 1  # nothing stored


def test_a_larger_memory_cap_is_fine_where_a_profile_allows_it(env):
    assert tenant(env, "add", "t-big", "--max-memory", "4096").returncode == 0
    assert show(env, "t-big")["max_memory_mb"] == "4096"


def test_the_caps_on_what_a_tenant_holds_are_stored_and_show_says_what_it_holds(env, tmp_path):
    r = tenant(env, "add", "t-hold", "--max-listen-streams", "3", "--max-sse-streams", "4",
               "--max-tasks", "5", "--max-linked-mb", "6", "--max-linked-files", "7")
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip()
    t = show(env, "t-hold")
    assert (t["max_listen_streams"], t["max_sse_streams"], t["max_tasks"], t["max_linked_mb"],
            t["max_linked_files"]) == ("3", "4", "5", "6", "7")
    assert t["holding"] == {"listen_streams": 0, "sse_streams": 0, "tasks": 0, "linked_files": 0,
                            "linked_bytes": 0}
    assert tenant(env, "set", "t-hold", "--max-tasks", "9").returncode == 0
    t = show(env, "t-hold")
    assert (t["max_tasks"], t["max_listen_streams"]) == ("9", "3")
    # a file too large to return inline is kept in Redis against the tenant's linked-file caps
    ran = snakepit("run", "--key", key, "--profile", "python.filesystem", "--out", str(tmp_path),
                   "open('big.bin', 'wb').write(b'x' * 200000)", env=env)
    assert ran.returncode == 0, ran.stderr
    assert show(env, "t-hold")["holding"]["linked_files"] == 1
    assert show(env, "t-hold")["holding"]["linked_bytes"] == 200000
    text = tenant(env, "show", "t-hold").stdout
    assert "holding" in text and "linked_files=1" in text, text


def test_add_twice_is_refused(env):
    assert tenant(env, "add", "t-twice").returncode == 0
    r = tenant(env, "add", "t-twice")
    assert r.returncode == 1 and "already exists" in r.stderr


def test_set_changes_only_what_is_given_and_checks_it(env):
    key = tenant(env, "add", "t-set", "--rate", "2", "--burst", "3").stdout.strip()
    r = tenant(env, "set", "t-set", "--burst", "9", "--profiles", "python.filesystem")
    assert r.returncode == 0, r.stderr
    t = show(env, "t-set")
    assert (t["rate"], t["burst"], t["profiles"]) == ("2", "9", "python.filesystem")
    assert tenant(env, "set", "t-set", "--profiles", "all").returncode == 0
    assert show(env, "t-set")["profiles"] == ""
    bad = tenant(env, "set", "t-set", "--profiles", "python.nosuch")
    assert bad.returncode == EX_USAGE and show(env, "t-set")["profiles"] == ""
    assert snakepit("run", "--key", key, "print(2)", env=env).returncode == 0  # same key
    assert tenant(env, "set", "t-none", "--burst", "2").returncode == 1


def test_rotate_key_replaces_the_key_and_keeps_the_quotas(env):
    old = tenant(env, "add", "t-rot", "--burst", "7").stdout.strip()
    r = tenant(env, "rotate-key", "t-rot", "--json")
    assert r.returncode == 0
    new = json.loads(r.stdout)["api_key"]
    assert new != old and show(env, "t-rot")["burst"] == "7"
    assert snakepit("run", "--key", old, "1", env=env).returncode == 77
    assert snakepit("run", "--key", new, "1", env=env).returncode == 0
    assert tenant(env, "rotate-key", "t-nobody").returncode == 1


def test_list_shows_every_tenant(env):
    tenant(env, "add", "t-listed")
    r = tenant(env, "list")
    assert r.returncode == 0 and "t-listed\n" in r.stdout and "local\n" in r.stdout
    names = [json.loads(l)["tenant"] for l in tenant(env, "list", "--json").stdout.splitlines()]
    assert "t-listed" in names and "local" in names


def test_remove_ends_the_key(env):
    key = tenant(env, "add", "t-gone").stdout.strip()
    r = tenant(env, "remove", "t-gone")
    assert r.returncode == 0 and "removed" in r.stderr
    assert snakepit("run", "--key", key, "1", env=env).returncode == 77
    assert tenant(env, "remove", "t-gone").returncode == 1


def test_redis_flag_and_unreachable_redis(farm):
    r = snakepit("tenant", "list", "--redis", farm.ready["redis"])
    assert r.returncode == 0 and "local" in r.stdout
    down = snakepit("tenant", "list", "--redis", "unix:///nonexistent/redis.sock")
    assert down.returncode == EX_UNAVAILABLE and "redis" in down.stderr.lower()


@pytest.mark.parametrize("args", [[], ["bogus"], ["show"], ["add", "bad name"], ["list", "x"],
                                  ["add", "x", "--bogus"]])
def test_usage_errors_exit_64(env, args):
    r = tenant(env, *args)
    assert r.returncode == EX_USAGE and r.stderr.strip()


def test_help_names_every_verb_and_flag():
    r = snakepit("tenant", "--help")
    assert r.returncode == 0
    for word in ("add NAME", "set NAME", "list", "show NAME", "rotate-key NAME", "remove NAME",
                 "--rate", "--burst", "--max-concurrency", "--max-timeout", "--max-memory",
                 "--profiles", "--state-dir", "--redis", "--json", "--max-listen-streams",
                 "--max-sse-streams", "--max-tasks", "--max-linked-mb", "--max-linked-files",
                 "--egress", "--no-egress", "--egress-max-bytes", "--egress-max-conns"):
        assert word in r.stdout, word


def test_egress_rules_are_checked_stored_as_the_executor_reads_them_and_replaced(env):
    r = tenant(env, "add", "t-net", "--egress", "Example.COM:443", "--egress", "*.pypi.org",
               "--egress", "10.1.2.3/8:5432", "--egress", "[2001:db8::1]:80",
               "--egress-max-bytes", "1000000", "--egress-max-conns", "5")
    assert r.returncode == 0, r.stderr
    t = show(env, "t-net")
    assert t["egress"] == "example.com:443,*.pypi.org,10.0.0.0/8:5432,[2001:db8::1]:80"
    assert (t["egress_max_bytes"], t["egress_max_conns"]) == ("1000000", "5")
    # set: the rules given replace the stored ones; the caps stay
    assert tenant(env, "set", "t-net", "--egress", "api.example.com:443").returncode == 0
    t = show(env, "t-net")
    assert t["egress"] == "api.example.com:443" and t["egress_max_bytes"] == "1000000"
    # other quotas leave the rules alone
    assert tenant(env, "set", "t-net", "--burst", "3").returncode == 0
    assert show(env, "t-net")["egress"] == "api.example.com:443"
    assert tenant(env, "set", "t-net", "--no-egress").returncode == 0
    assert "egress" not in show(env, "t-net")


@pytest.mark.parametrize("rule", ["http://example.com", "example.com:0", "a..b", "10.0.0.0/40",
                                  "exa mple.com", "::1:443x"])
def test_a_rule_that_does_not_parse_is_refused_and_nothing_stored(env, rule):
    r = tenant(env, "add", "t-badnet", "--egress", rule)
    assert r.returncode == EX_USAGE and "egress rule" in r.stderr, r.stderr
    assert tenant(env, "show", "t-badnet").returncode == 1


def test_egress_and_no_egress_together_is_a_usage_error(env):
    r = tenant(env, "add", "t-both", "--egress", "example.com", "--no-egress")
    assert r.returncode == EX_USAGE and "--no-egress" in r.stderr
