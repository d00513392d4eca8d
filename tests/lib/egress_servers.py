"""tests/lib/egress_servers.py — what the network-egress tests reach, all on 127.0.0.1 outside the
sandbox: an HTTP server with a canary page (and a large one), the same over HTTPS with a test CA
made by the openssl command line, a raw TCP echo server, and a DNS server whose names the test
controls. Each counts what reached it, so a test can assert that a refused job reached nothing.
Every server runs on a thread of the test process and stops with close()."""
import http.server
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import tempfile
import threading

CANARY = "CANARY-7f3a9c egress reached the test server"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.owner.requests.append(self.path)
        if self.path.startswith("/big"):
            body = b"x" * (1 << 20)
        else:
            body = ("%s %s" % (CANARY, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _Threaded(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class HttpServer:
    """The canary page at any path; /big is a MiB. tls: (certfile, keyfile) for HTTPS."""

    def __init__(self, tls=None):
        self.requests = []
        self.srv = _Threaded(("127.0.0.1", 0), _Handler)
        self.srv.owner = self
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class CertAuthority:
    """A CA and a certificate for 127.0.0.1 and canary.test signed by it, made with the openssl
    command line in a temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sp-egress-ca-")
        d = self.dir
        run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=snakepit test CA", "-keyout", "ca.key", "-out", "ca.pem")
        with open(os.path.join(d, "ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:canary.test\n")
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")
        run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")
        self.cert = os.path.join(d, "server.pem")
        self.key = os.path.join(d, "server.key")
        with open(os.path.join(d, "ca.pem")) as f:
            self.pem = f.read()


class EchoServer:
    """Raw TCP: every byte comes back, prefixed once by a greeting (as a database's would)."""

    def __init__(self):
        self.connections = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            conn.sendall(b"HELLO\n")
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                conn.sendall(data)

    def close(self):
        self.sock.close()


class DnsServer:
    """UDP DNS answering A questions from names ({name: "a.b.c.d"}); other names NXDOMAIN,
    other types an empty answer. asked lists the names asked."""

    def __init__(self, names):
        self.names = {k.lower(): v for k, v in names.items()}
        self.asked = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                msg, peer = self.sock.recvfrom(2048)
            except OSError:
                return
            reply = self._answer(msg)
            if reply:
                self.sock.sendto(reply, peer)

    def _answer(self, msg):
        if len(msg) < 12:
            return None
        qid, _flags, qd = struct.unpack(">HHH", msg[:6])
        at, labels = 12, []
        while at < len(msg) and msg[at]:
            n = msg[at]
            labels.append(msg[at + 1:at + 1 + n].decode("ascii", "replace"))
            at += 1 + n
        question = msg[12:at + 5]
        qtype = struct.unpack(">H", msg[at + 1:at + 3])[0] if at + 3 <= len(msg) else 0
        name = ".".join(labels).lower()
        self.asked.append(name)
        addr = self.names.get(name)
        if addr is None:
            return struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
        if qtype != 1:
            return struct.pack(">HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question
        rr = struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(addr)
        return struct.pack(">HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr

    def close(self):
        self.sock.close()
