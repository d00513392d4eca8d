"""An executor stopped the way operators stop one — SIGTERM, from systemd, Kubernetes or podman —
drains instead of dying: under 1,500 requests of 60 ms at concurrency 16 over a two-broker farm
with two executors, the second one is sent SIGTERM after 500 answers, while both its slots run a
job. It tells both brokers it is leaving
(LEAVING), takes no new job, lets the ones it runs finish and exits by itself, well within its
grace; the queued work goes to the farm's own executor. Asserted: every request answered `ok`,
neither broker requeued a job (snakepit_broker_jobs_requeued_total stays 0) or answered one
`lost`, both counted the drain, and the drained node said it drained (not that its grace ran
out) and exited 0. Nothing here is timed but the bounded waits."""
import os
import signal
import subprocess
import time
import urllib.request

from chaoslib import (Load, answered, assert_records_final, cmdline, component_pid,
                      free_port, serves, wait_for)
from chaoslib import _environ  # the farm executor's own environment, for its twin

N = 1500
AT = 500
CONC = 16
GRACE_S = 60
# Long enough that a job seen running when the twin's metrics answer is still running when
# SIGTERM arrives a few milliseconds later (with 20 ms jobs, both of the twin's jobs ended in
# between once under ASan, and it drained with nothing running: the premise, not the drain, failed)
DRAIN_CODE = "import time\ntime.sleep(0.06)\nprint(sum(range(1000)))"


def metrics(url):
    return urllib.request.urlopen(url, timeout=10).read().decode()


def metric(url, name, **labels):
    """The sum of a metric's samples whose labels include these."""
    total = 0.0
    for line in metrics(url).splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, value = line.rsplit(" ", 1)
        if all('%s="%s"' % kv in head for kv in labels.items()):
            total += float(value)
    return total


class Twin:
    """A second executor node on the farm: the farm executor's own command line and
    environment, its own metrics port and log, started and stopped here by its pid."""

    def __init__(self, farm):
        argv, env = cmdline(component_pid(farm, "executor")), _environ(component_pid(farm, "executor"))
        self.metrics_url = "http://127.0.0.1:%d/metrics" % free_port()
        argv[argv.index("--metrics") + 1] = self.metrics_url[7:-8]
        argv += ["--log-level", "info", "--drain-grace-s", str(GRACE_S)]
        self.log_path = os.path.join(farm.dir, "twin.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def test_sigterm_drains_an_executor_under_load_and_nothing_is_requeued(farm):
    brokers = [farm.ready["metrics"][0], farm.ready["metrics"][3]]  # ready.json: broker, executor, mcp, broker2
    twin = Twin(farm)
    try:
        for url in brokers:  # both executors registered with both brokers
            wait_for(lambda: metric(url, "snakepit_broker_service_executors",
                                    service="python.basic") == 2, 120, "two executors at " + url)
        wait_for(lambda: serves(farm.url, farm.chaos_key), 60, "the farm to serve")
        load = Load(farm.url, farm.chaos_key, N, CONC, DRAIN_CODE)
        fired = {}

        def sigterm():
            # both of the twin's slots run a job (16 callers, 4 slots between the two nodes)
            wait_for(lambda: metric(twin.metrics_url, "snakepit_executor_slots", state="busy") >= 2,
                     30, "the twin to run two jobs", every=0.001)
            fired["ran_before"] = metric(twin.metrics_url, "snakepit_executor_jobs_total")
            twin.proc.send_signal(signal.SIGTERM)
            fired["at"] = time.time()

        load.at(AT, sigterm)
        load.run(timeout=900)
        assert load.kinds() == {("ok", None): N}, load.kinds()
        assert fired["ran_before"] > 0  # it did its share before it was stopped
        # it drained and exited by itself: within its grace, with status 0
        rc = twin.proc.wait(GRACE_S + 30)
        text = twin.output()
        assert rc == 0, text[-3000:]
        for marker in ("ERROR: AddressSanitizer", "runtime error:"):  # a sanitizer build's
            assert marker not in text, text[text.index(marker):][:3000]
        assert "event=drained" in text and "event=drain_grace_over" not in text, text[-3000:]
        draining = [l for l in text.splitlines() if "event=draining" in l]
        assert len(draining) == 1 and 'reason="SIGTERM"' in draining[0], draining
        assert int(draining[0].rsplit("running=", 1)[1].split()[0]) > 0, draining  # mid-job
        for url in brokers:
            assert metric(url, "snakepit_broker_jobs_requeued_total") == 0, url
            assert metric(url, "snakepit_broker_jobs_lost_total") == 0, url
            assert metric(url, "snakepit_broker_executor_drains_total") == 1, url
            wait_for(lambda: metric(url, "snakepit_broker_service_executors",
                                    service="python.basic") == 1, 30, "the twin gone at " + url)
        assert_records_final(farm.redis(), answered(load))
    finally:
        twin.stop()
