# executor-node/python/egress.py — network egress as a job's ordinary code meets it.
#
# A job the node granted egress gets its proxy's URL (http://job:SECRET@127.0.0.1:PORT, the egress
# process's listener in the zygote's network namespace, the only address the sandbox can reach).
# enable() puts it in HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their lower-case forms), which
# urllib, http.client through urllib, requests, httpx and pip read; and makes plain TCP work too:
# a stream socket connecting anywhere but the proxy is connected to the proxy instead and asks it
# for a CONNECT tunnel to the destination, which the egress process judges like any other. Names
# are never resolved here (the sandbox has no resolver, and the address the policy judges must be
# the one connected to): getaddrinfo answers a name with a placeholder address in 198.18.0.0/15
# that the tunnel turns back into the name. A refusal is an ordinary PermissionError whose message
# is the egress process's: the destination, why, and where an operator sets the policy.
#
# Loaded in the zygote (which never enables it); enable() and disable() run in the child, at each
# job (a session's cells each get their own grant, or none).
import base64
import errno
import http.client
import os
import socket
import sys
from urllib.parse import urlsplit

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# The system's CA certificates, where the zygote mounted them (profiles.h egress_ro_paths):
# OpenSSL's own directory, and its bundle for what reads a file (requests, httpx, pip).
_CA_DIR = "/usr/lib/ssl/certs"
_CA_VARS = {"SSL_CERT_DIR": _CA_DIR, "SSL_CERT_FILE": _CA_DIR + "/ca-certificates.crt",
            "REQUESTS_CA_BUNDLE": _CA_DIR + "/ca-certificates.crt"}
_HEAD_MAX = 8192
_HANDSHAKE_S = 60.0

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo
_real_begin = http.client.HTTPResponse.begin

_state = {"proxy": None, "addr": None, "auth": None}
_names = {}  # placeholder address -> name
_addrs = {}  # name -> placeholder address
_FAKE_BASE = (198 << 24) | (18 << 16)  # 198.18.0.0/15 (RFC 2544): never a real destination
_FAKE_SIZE = 1 << 17


def _numeric(host):
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        return True
    except (OSError, ValueError):
        return False


def _placeholder(name):
    addr = _addrs.get(name)
    if addr is None:
        n = len(_addrs) + 1
        if n >= _FAKE_SIZE:
            raise socket.gaierror(socket.EAI_AGAIN, "too many names in one job")
        v = _FAKE_BASE + n
        addr = "%d.%d.%d.%d" % (v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255)
        _addrs[name], _names[addr] = addr, name
    return addr


def _getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    """Names get a placeholder address (the egress process resolves the real one); addresses
    and everything without egress go to the real getaddrinfo."""
    if _state["proxy"] is None or host is None:
        return _real_getaddrinfo(host, port, family, type, proto, flags)
    name = host.decode("idna") if isinstance(host, bytes) else str(host)
    if not name or _numeric(name) or name in _names:
        return _real_getaddrinfo(host, port, family, type, proto, flags)
    if family not in (0, socket.AF_INET):
        raise socket.gaierror(socket.EAI_FAMILY, "only IPv4 placeholders are given for names")
    if type not in (0, socket.SOCK_STREAM):
        raise socket.gaierror(socket.EAI_SOCKTYPE, "only TCP reaches the network from the sandbox")
    try:
        port = int(port or 0)
    except (TypeError, ValueError):
        raise socket.gaierror(socket.EAI_SERVICE, "give the port as a number") from None
    addr = _placeholder(name.lower().rstrip("."))
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (addr, port))]


def _target(sock, address):
    """(host, port) to tunnel to, or None when the connection goes where it asked (the proxy
    itself, a non-TCP socket, or no egress)."""
    if (_state["proxy"] is None or sock.family not in (socket.AF_INET, socket.AF_INET6) or
            sock.type != socket.SOCK_STREAM or not isinstance(address, tuple) or len(address) < 2):
        return None
    host, port = str(address[0]), address[1]
    if (host, port) == _state["addr"]:
        return None
    return _names.get(host, host), port


def _refused(code, reason):
    if code in (403, 407):
        return PermissionError(errno.EACCES, reason)
    if code == 504:
        return TimeoutError(errno.ETIMEDOUT, reason)
    if code == 429:
        return ConnectionRefusedError(errno.ECONNREFUSED, reason)
    return ConnectionRefusedError(errno.ECONNREFUSED, reason)


def _tunnel(sock, host, port):
    """sock, connected to the proxy, becomes a tunnel to host:port (its timeout kept)."""
    timeout = sock.gettimeout()
    sock.settimeout(_HANDSHAKE_S if not timeout else timeout)
    try:
        _real_connect(sock, _state["addr"])
        where = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        sock.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n"
                      % (where, where, _state["auth"])).encode("ascii"))
        head = b""
        while not head.endswith(b"\r\n\r\n"):  # byte by byte: what follows is the destination's
            b = sock.recv(1)
            if not b or len(head) > _HEAD_MAX:
                raise ConnectionResetError(errno.ECONNRESET, "the egress proxy closed the tunnel")
            head += b
        line = head.split(b"\r\n", 1)[0].decode("ascii", "replace").split(" ", 2)
        code = int(line[1]) if len(line) > 1 and line[1].isdigit() else 0
        if code != 200:
            raise _refused(code, line[2] if len(line) > 2 else "refused")
    finally:
        sock.settimeout(timeout)


def _connect(self, address):
    target = _target(self, address)
    if target is None:
        return _real_connect(self, address)
    _tunnel(self, *target)


def _connect_ex(self, address):
    if _target(self, address) is None:
        return _real_connect_ex(self, address)
    try:
        _connect(self, address)
    except OSError as e:
        return e.errno or errno.ECONNREFUSED
    return 0


def _begin(self):
    """A proxy's refusal of a plain-HTTP request raises, as a refused tunnel does, rather than
    reading as the destination's own 403 (requests returns those as responses)."""
    _real_begin(self)
    if (_state["proxy"] is not None and self.status in (403, 407) and
            self.headers.get("X-Snakepit-Egress") == "refused"):
        raise PermissionError(errno.EACCES, self.reason)


async def _loop_getaddrinfo(loop, host, port, *, family=0, type=0, proto=0, flags=0):
    """asyncio resolves in a thread pool, which the sandbox cannot start: inline instead (a
    placeholder for a name takes no time)."""
    return socket.getaddrinfo(host, port, family, type, proto, flags)


def _patch(on):
    socket.socket.connect = _connect if on else _real_connect
    socket.socket.connect_ex = _connect_ex if on else _real_connect_ex
    socket.getaddrinfo = _getaddrinfo if on else _real_getaddrinfo
    http.client.HTTPResponse.begin = _begin if on else _real_begin
    base = sys.modules.get("asyncio.base_events")
    if base is not None:
        if not hasattr(_patch, "loop_getaddrinfo"):
            _patch.loop_getaddrinfo = base.BaseEventLoop.getaddrinfo
        base.BaseEventLoop.getaddrinfo = _loop_getaddrinfo if on else _patch.loop_getaddrinfo


def _renew_openers(old, new):
    """A session's cells each have their own credentials, and urlopen keeps the opener it built
    at its first call, whose ProxyHandler bound the proxy it read then: rebound to the new one."""
    urllib_request = sys.modules.get("urllib.request")
    opener = getattr(urllib_request, "_opener", None) if urllib_request else None
    if not old or not new or opener is None:
        return
    for h in getattr(opener, "handlers", ()):
        proxies = getattr(h, "proxies", None)
        if not isinstance(h, urllib_request.ProxyHandler) or not isinstance(proxies, dict):
            continue
        for scheme, url in list(proxies.items()):
            if url == old:  # as ProxyHandler.__init__ binds it
                proxies[scheme] = new
                setattr(h, "%s_open" % scheme,
                        lambda r, proxy=new, type=scheme, meth=h.proxy_open: meth(r, proxy, type))


# The trust store's location, for every job (set once, in the zygote, before any fork): a job
# without egress that tries HTTPS then gets the network's refusal, not a missing CA bundle.
os.environ.update(_CA_VARS)


def enable(proxy):
    """The job's grant: its proxy in the environment, TCP tunnelled through it."""
    _renew_openers(_state["proxy"] or _state.get("last"), proxy)
    u = urlsplit(proxy)
    _state["proxy"] = proxy
    _state["addr"] = (u.hostname, u.port)
    _state["auth"] = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
    for k in _PROXY_VARS:
        os.environ[k] = proxy
    os.environ.update(_CA_VARS)
    for k in ("NO_PROXY", "no_proxy"):
        os.environ.pop(k, None)
    _patch(True)


def disable():
    """No grant (a job without egress, or a session's cell that asked for none)."""
    if _state["proxy"] is None and not any(k in os.environ for k in _PROXY_VARS):
        return  # a one-off job without egress: nothing was ever set (no page to copy)
    _state["last"] = _state["proxy"]
    _state.update(proxy=None, addr=None, auth=None)
    for k in _PROXY_VARS:
        os.environ.pop(k, None)
    _patch(False)
