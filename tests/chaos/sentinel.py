"""tests/chaos/sentinel.py — a real Redis Sentinel set-up for the suite: a master, one replica
and three sentinels (quorum 2) on free loopback ports, each redis-server configured as
docs/operating.md "Redis" tells operators to (AOF everysec, volatile-lru, listpack records).
Failover is quick (down after 1 s). Every process is started here and stopped by its pid."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import redis
import redis.sentinel

from chaoslib import free_port, wait_for

MASTER_NAME = "chaos"
REDIS_OPTS = ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory", "512mb",
              "--maxmemory-policy", "volatile-lru", "--hash-max-listpack-value", "4096"]


class SentinelSet:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="spsent-", dir="/tmp")
        self.procs = {}
        self.master_port = free_port()
        self.replica_port = free_port()
        self._redis("master", self.master_port)
        self._redis("replica", self.replica_port, "--replicaof", "127.0.0.1", str(self.master_port))
        self.sentinel_ports = [free_port() for _ in range(3)]
        for i, port in enumerate(self.sentinel_ports):
            conf = os.path.join(self.dir, "sentinel-%d.conf" % i)
            with open(conf, "w") as f:
                f.write("port %d\nbind 127.0.0.1\ndir %s\n" % (port, self.dir))
                f.write("sentinel monitor %s 127.0.0.1 %d 2\n" % (MASTER_NAME, self.master_port))
                f.write("sentinel down-after-milliseconds %s 1000\n" % MASTER_NAME)
                f.write("sentinel failover-timeout %s 3000\n" % MASTER_NAME)
            self._spawn("sentinel-%d" % i, ["redis-sentinel", conf])
        self.url = "redis-sentinel://%s/%s" % (
            ",".join("127.0.0.1:%d" % p for p in self.sentinel_ports), MASTER_NAME)
        try:
            wait_for(self._replicating, 30, "the replica to sync and the sentinels to see both")
        except AssertionError:
            self.stop()
            raise

    def _redis(self, name, port, *extra):
        d = os.path.join(self.dir, name)
        os.mkdir(d)
        self._spawn(name, ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                           "--dir", d, "--save", "", *REDIS_OPTS, *extra])

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL)

    def _ours(self, name, port):
        """The server on port is the process we started (a free port can be taken by someone
        else between choosing it and binding it: then this set-up must not go on)."""
        pid = redis.Redis(port=port, socket_timeout=2).info("server")["process_id"]
        assert pid == self.procs[name].pid, "port %d is not our %s" % (port, name)
        return True

    def _replicating(self):
        for name, port in [("master", self.master_port), ("replica", self.replica_port)] + [
                ("sentinel-%d" % i, p) for i, p in enumerate(self.sentinel_ports)]:
            if self.procs[name].poll() is not None:
                raise AssertionError("%s exited (port %d taken?)" % (name, port))
            self._ours(name, port)
        replica = redis.Redis(port=self.replica_port).info("replication")
        if replica.get("master_link_status") != "up" or replica.get("master_sync_in_progress"):
            return False
        # every sentinel must know the replica, not only one: each learns of it from the
        # master's INFO (every 10 s), and a leader elected before it has must abort the failover
        # ("-failover-abort-no-good-slave") and may try again only 2 x failover-timeout later —
        # a kill 8-15 s from promotion instead of ~2.3 s, seen in 2 of 8 set-ups
        for p in self.sentinel_ports:
            seen = redis.Redis(port=p).sentinel_master(MASTER_NAME)
            if int(seen["num-other-sentinels"]) != 2 or int(seen["num-slaves"]) < 1:
                return False
        return True

    def master(self):
        """A client for whoever is master now."""
        s = redis.sentinel.Sentinel([("127.0.0.1", p) for p in self.sentinel_ports],
                                    socket_timeout=2)
        return s.master_for(MASTER_NAME, decode_responses=True, socket_timeout=5)

    def master_port_now(self):
        return int(redis.Redis(port=self.sentinel_ports[0]).sentinel_get_master_addr_by_name(
            MASTER_NAME)[1])

    def kill_master(self):
        p = self.procs["master"]
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        return time.time()

    def stop(self):
        for name, p in self.procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
