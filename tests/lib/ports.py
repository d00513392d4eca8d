"""tests/lib/ports.py — a free loopback TCP port for a component that a test starts.

Checking that a port is free and letting another process bind it later is a race. The kernel
gives every outgoing connection its local port from the ephemeral range
(/proc/sys/net/ipv4/ip_local_port_range), so a port picked there can become some client's
(a Redis or ZeroMQ connection, of this farm or of a suite running beside it) in between. A
port is therefore picked below that range, at random, and never twice by one process; from
SNAKEPIT_PORT_RANGE ("LO-HI") when it is set: tests/suites.sh gives each lane of suites that
run side by side its own range, so that two lanes never pick the same port. `snakepit up` reads
the same variable (its --port-range) for the ports it picks itself, so that a farm a test starts
with `--metrics-port 0` stays in its lane's range too.
"""
import os
import random
import socket

_picked = set()
_rand = random.Random(os.getpid() ^ int.from_bytes(os.urandom(4), "little"))


def _range():
    spec = os.environ.get("SNAKEPIT_PORT_RANGE", "")
    if spec:
        lo, hi = (int(x) for x in spec.split("-"))
        return lo, hi
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_lo = 32768
    return 10000, ephemeral_lo - 1


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_range(n):
    """LO, HI: n consecutive ports of this process's range, each free now (for a command that
    picks its own ports within a range it is given)."""
    lo, hi = _range()
    for _ in range(200):
        start = _rand.randint(lo, hi - n + 1)
        ports = range(start, start + n)
        if not _picked.intersection(ports) and all(_bindable(p) for p in ports):
            _picked.update(ports)
            return start, start + n - 1
    raise RuntimeError("no %d free consecutive ports in %d-%d" % (n, lo, hi))


def free_port():
    lo, hi = _range()
    if hi - lo >= 64:
        for _ in range(200):
            port = _rand.randint(lo, hi)
            if port not in _picked and _bindable(port):
                _picked.add(port)
                return port
    with socket.socket() as s:  # a range used up or too small: whatever the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
