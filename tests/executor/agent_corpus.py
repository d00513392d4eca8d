"""tests/executor/agent_corpus.py — ordinary agent code, written the way models write
it: files in the workspace, os.path, sys.version, sqlite3, sklearn fits, seaborn plots, PIL
edits, Excel round trips, non-ASCII names. Each snippet must end `ok` in its profile, and print
what `expect` names (a substring, or each of a tuple). `files` are its inputs (PROTOCOL.md §4).

Nothing here is an attack: tests/security holds those. A snippet that fails here is a sandbox
that gets in the way of ordinary work. This file: the standard library (python.basic,
python.filesystem); agent_corpus_ds.py: python.data_science."""
import struct
import zlib

B, FS, DS = "python.basic", "python.filesystem", "python.data_science"


def _png(w=8, h=6):
    """A small RGB PNG, built by hand (no PIL in the test process)."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 30 % 256, y * 40 % 256, 128)) for x in range(w))
                    for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


SALES_CSV = "region,product,units,price\nNorth,Widget,10,2.5\nSouth,Widget,4,2.5\n" \
            "North,Gadget,3,10.0\nEast,Gadget,7,10.0\nSouth,Gizmo,12,1.25\n"

CORPUS = [
    # ---- python.basic: the standard library, no filesystem -------------------------------------
    dict(name="sys_version_platform", profile=B, code="""
import sys, platform
print(f"Python {sys.version.split()[0]} on {platform.system()} ({platform.machine()})")
print(sys.version_info >= (3, 8), sys.maxsize > 2**32, sys.getrecursionlimit() > 100)
""", expect=("Python 3.11", "True True True")),
    dict(name="os_path_handling", profile=B, code="""
import os
path = os.path.join("data", "raw", "report.final.csv")
print(os.path.basename(path), os.path.splitext(path)[1], os.path.dirname(path))
print(os.path.normpath("a/b/../c"), os.sep, os.path.isabs("/x"))
""", expect="report.final.csv .csv data/raw"),
    dict(name="os_environ_and_cwd", profile=B, code="""
import os
home = os.environ.get("HOME", "~")
print("home set:", bool(home), "| cwd:", os.getcwd(), "| pid:", os.getpid() > 0)
print(os.cpu_count() is None or os.cpu_count() >= 1)
""", expect="home set: True"),
    dict(name="sqlite_in_memory", profile=B, code="""
import sqlite3
conn = sqlite3.connect(":memory:")
cur = conn.cursor()
cur.execute("CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT, dept TEXT, salary REAL)")
cur.executemany("INSERT INTO employees (name, dept, salary) VALUES (?, ?, ?)",
                [("Alice", "Eng", 120000), ("Bob", "Eng", 95000), ("Zoë", "Sales", 70000)])
conn.commit()
for row in cur.execute("SELECT dept, COUNT(*), AVG(salary) FROM employees GROUP BY dept ORDER BY dept"):
    print(row)
conn.close()
""", expect=("('Eng', 2, 107500.0)", "('Sales', 1, 70000.0)")),
    dict(name="json_and_pprint", profile=B, code="""
import json
from pprint import pprint
data = {"name": "Ünïcode ✓", "values": [1, 2, 3], "nested": {"ok": True}}
text = json.dumps(data, ensure_ascii=False, indent=2)
pprint(json.loads(text))
print(len(text) > 10)
""", expect="Ünïcode ✓"),
    dict(name="collections_counting", profile=B, code="""
from collections import Counter, defaultdict, deque, OrderedDict
words = "the quick brown fox jumps over the lazy dog the end".split()
print(Counter(words).most_common(2))
groups = defaultdict(list)
for w in words:
    groups[len(w)].append(w)
print(sorted(groups)[:3], deque(range(5), maxlen=3))
""", expect="[('the', 3)"),
    dict(name="datetime_and_zones", profile=B, code="""
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo
meeting = datetime(2024, 3, 10, 9, 30, tzinfo=ZoneInfo("America/New_York"))
print(meeting.astimezone(ZoneInfo("Europe/Paris")).strftime("%Y-%m-%d %H:%M %Z"))
print((datetime(2024, 12, 25) - datetime(2024, 1, 1)).days, timedelta(hours=36))
print(datetime.now(timezone.utc).year >= 2024)
""", expect=("2024-03-10 14:30 CET", "359 1 day, 12:00:00")),
    dict(name="logging_to_stderr", profile=B, code="""
import logging
logging.basicConfig(level=logging.DEBUG, format="%(levelname)s:%(name)s:%(message)s")
logger = logging.getLogger("analysis")
logger.info("starting run %d", 1)
logger.warning("careful")
print("done")
""", expect="done"),
    dict(name="warnings_and_catch", profile=B, code="""
import warnings
def old():
    warnings.warn("old() is deprecated", DeprecationWarning, stacklevel=2)
    return 1
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old()
print(len(caught), caught[0].category.__name__)
""", expect="1 DeprecationWarning"),
    dict(name="traceback_in_except", profile=B, code="""
import traceback, json
try:
    json.loads("{not json}")
except Exception as exc:
    tb = traceback.format_exc()
    print("caught:", type(exc).__name__, "frames:", tb.count("File "))
    traceback.print_exc()
""", expect="caught: JSONDecodeError"),
    dict(name="inspect_own_code", profile=B, code="""
import inspect
def area(width: float, height: float = 1.0) -> float:
    \"\"\"Rectangle area.\"\"\"
    return width * height
print(inspect.signature(area))
print(inspect.getsource(area).splitlines()[0])
print(inspect.getdoc(area), inspect.isfunction(area))
""", expect=("(width: float, height: float = 1.0) -> float", "def area(")),
    dict(name="argparse_defaults", profile=B, code="""
import argparse
parser = argparse.ArgumentParser(description="demo")
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--verbose", action="store_true")
args = parser.parse_args([])
print(args.epochs, args.lr, args.verbose)
args = parser.parse_args(["--epochs", "3", "--verbose"])
print(vars(args))
""", expect=("5 0.01 False", "'epochs': 3")),
    dict(name="pickle_dataclass", profile=B, code="""
import pickle
from dataclasses import dataclass, field, asdict

@dataclass
class Point:
    x: float
    y: float
    tags: list = field(default_factory=list)

p = Point(1.5, -2.0, ["a"])
q = pickle.loads(pickle.dumps(p))
print(q == p, asdict(q))
""", expect="True {'x': 1.5"),
    dict(name="regex_and_text", profile=B, code="""
import re, textwrap, string
text = "Contact: alice@example.com, bob@test.org; phone 555-1234"
print(re.findall(r"[\\w.]+@[\\w.]+", text))
print(textwrap.fill("lorem ipsum " * 10, width=30).splitlines()[0])
print(string.Template("Hello $who").substitute(who="world"), "abc".title())
""", expect="['alice@example.com', 'bob@test.org']"),
    dict(name="hashing_ids_encoding", profile=B, code="""
import hashlib, uuid, secrets, base64
print(hashlib.sha256(b"hello").hexdigest()[:16])
print(len(str(uuid.uuid4())), len(secrets.token_hex(8)))
print(base64.b64encode("naïve".encode()).decode(), base64.b64decode("bmHDr3Zl").decode())
""", expect=("2cf24dba5fb0a30e", "36 16", "bmHDr3Zl naïve")),
    dict(name="decimal_fractions_stats", profile=B, code="""
from decimal import Decimal, getcontext
from fractions import Fraction
import statistics
getcontext().prec = 30
print(Decimal(1) / Decimal(7))
print(Fraction(3, 4) + Fraction(1, 6))
data = [2.5, 3.1, 4.7, 3.3, 2.9]
print(round(statistics.mean(data), 3), statistics.median(data), round(statistics.stdev(data), 3))
""", expect=("0.142857142857142857142857142857", "11/12", "3.3 3.1")),
    dict(name="functools_itertools", profile=B, code="""
from functools import lru_cache, reduce, partial
from itertools import combinations, permutations, accumulate, groupby
@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(80), list(combinations("abc", 2))[:2], list(accumulate([1, 2, 3, 4])))
print(reduce(lambda a, b: a * b, range(1, 8)), [k for k, _ in groupby("aabbbc")])
""", expect="23416728348467685"),
    dict(name="typing_enum_dataclass", profile=B, code="""
from dataclasses import dataclass
from enum import Enum, auto
from typing import Optional, List, Dict

class Color(Enum):
    RED = auto()
    GREEN = auto()

@dataclass(frozen=True)
class Item:
    name: str
    color: Color
    price: Optional[float] = None

inventory: Dict[str, List[Item]] = {"shelf": [Item("pen", Color.RED, 1.2), Item("cup", Color.GREEN)]}
print([i.name for i in inventory["shelf"] if i.color is Color.RED], Color.GREEN.value)
""", expect="['pen'] 2"),
    dict(name="csv_in_memory", profile=B, code="""
import csv, io
buf = io.StringIO()
writer = csv.DictWriter(buf, fieldnames=["city", "temp"])
writer.writeheader()
writer.writerows([{"city": "Zürich", "temp": 21.5}, {"city": "Kraków", "temp": 19}])
buf.seek(0)
rows = list(csv.DictReader(buf))
print(rows[0]["city"], sum(float(r["temp"]) for r in rows))
""", expect="Zürich 40.5"),
    dict(name="unicode_everywhere", profile=B, code="""
import unicodedata, sys
s = "Ωμέγα – naïve café 日本語 🐍"
print(s, len(s), s.upper())
print(unicodedata.name("🐍"), unicodedata.normalize("NFD", "é") != "é")
print(sys.getfilesystemencoding(), sys.stdout.encoding)
""", expect=("Ωμέγα – naïve café 日本語 🐍", "SNAKE", "utf-8")),
    dict(name="codecs_all_over", profile=B, code="""
import codecs
for enc in ("shift_jis", "cp1252", "koi8_r", "euc_kr", "gb18030", "cp437", "latin-1", "utf-16"):
    text = "テスト" if enc in ("shift_jis",) else "café"
    if enc == "koi8_r": text = "привет"
    if enc in ("euc_kr",): text = "안녕"
    if enc == "gb18030": text = "中文"
    assert text.encode(enc).decode(enc) == text, enc
print("all codecs ok", codecs.lookup("mac_roman").name)
""", expect="all codecs ok mac-roman"),
    dict(name="locale_and_encoding", profile=B, code="""
import locale
locale.setlocale(locale.LC_ALL, "")
print(locale.getpreferredencoding(False), locale.getlocale()[1])
print(f"{1234567.891:,.2f}")
""", expect=("utf-8 UTF-8", "1,234,567.89")),
    dict(name="timing_and_sleep", profile=B, code="""
import time, timeit
start = time.perf_counter()
time.sleep(0.01)
elapsed = time.perf_counter() - start
print("slept", elapsed >= 0.009)
print(timeit.timeit("sum(range(100))", number=1000) > 0)
""", expect="slept True"),
    dict(name="signal_alarm_timeout", profile=B, code="""
import signal, time
class Timeout(Exception):
    pass
def handler(signum, frame):
    raise Timeout()
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.05)
try:
    while True:
        time.sleep(0.01)
except Timeout:
    print("timed out as planned")
finally:
    signal.alarm(0)
""", expect="timed out as planned"),
    dict(name="heapq_bisect_algorithms", profile=B, code="""
import heapq, bisect, math
nums = [5, 1, 9, 3, 7]
print(heapq.nsmallest(2, nums), heapq.nlargest(1, nums))
arr = sorted(nums)
print(bisect.bisect_left(arr, 6), math.comb(10, 3), math.isqrt(99), math.gcd(12, 18))
primes = [n for n in range(2, 50) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print(primes[-3:])
""", expect=("[1, 3] [9]", "[41, 43, 47]")),
    dict(name="struct_array_binascii", profile=B, code="""
import struct, array, binascii
packed = struct.pack("<IHf", 1, 2, 3.5)
print(struct.unpack("<IHf", packed), binascii.hexlify(packed[:4]))
a = array.array("d", [1.0, 2.0])
a.append(3.0)
print(a.tolist(), a.itemsize)
""", expect="(1, 2, 3.5)"),
    dict(name="threading_lock_without_threads", profile=B, code="""
import threading, queue
lock = threading.Lock()
counter = 0
with lock:
    counter += 1
q = queue.Queue()
q.put("job")
print(counter, q.get(), threading.current_thread().name)
""", expect="1 job MainThread"),
    dict(name="shlex_fnmatch_glob_patterns", profile=B, code="""
import shlex, fnmatch
print(shlex.split('cmd --name "two words" -x'))
print(fnmatch.filter(["a.csv", "b.txt", "c.csv"], "*.csv"), shlex.quote("it's"))
""", expect="['cmd', '--name', 'two words', '-x']"),
    dict(name="gc_and_sizes", profile=B, code="""
import gc, sys
data = [list(range(100)) for _ in range(100)]
del data
print(gc.collect() >= 0, sys.getsizeof([1, 2, 3]) > 0, gc.isenabled())
""", expect="True True True"),
    dict(name="email_xml_html_url", profile=B, code="""
from email import message_from_string
import xml.etree.ElementTree as ET, html
from urllib.parse import urlparse, urlencode, parse_qs
msg = message_from_string("Subject: Héllo\\nFrom: a@b.c\\n\\nBody text")
root = ET.fromstring("<items><item id='1'>A</item><item id='2'>B</item></items>")
print(msg["Subject"], [i.get("id") for i in root.iter("item")], html.escape("<b>&</b>"))
u = urlparse("https://example.com/search?q=caf%C3%A9&page=2")
print(u.netloc, parse_qs(u.query)["q"], urlencode({"a": "b c"}))
""", expect=("Héllo ['1', '2'] &lt;b&gt;&amp;&lt;/b&gt;", "example.com ['café'] a=b+c")),
    dict(name="unittest_in_process", profile=B, code="""
import unittest
def add(a, b):
    return a + b
class TestAdd(unittest.TestCase):
    def test_ints(self):
        self.assertEqual(add(2, 3), 5)
    def test_strings(self):
        self.assertEqual(add("a", "b"), "ab")
result = unittest.main(argv=["tests"], exit=False, verbosity=0).result
print("ran", result.testsRun, "failures", len(result.failures))
""", expect="ran 2 failures 0"),
    dict(name="tracemalloc_memory", profile=B, code="""
import tracemalloc, resource
tracemalloc.start()
data = [bytes(1000) for _ in range(1000)]
current, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(peak > 900_000, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0)
""", expect="True True"),
    dict(name="subprocess_import_and_which", profile=B, code="""
import subprocess, shutil
print(subprocess.PIPE, shutil.which("definitely-not-a-command"))
print(hasattr(subprocess, "run"))
""", expect="-1 None"),

    # ---- python.filesystem: the workspace ------------------------------------------------------
    dict(name="pathlib_write_read_glob", profile=FS, code="""
from pathlib import Path
out = Path("output")
out.mkdir(exist_ok=True)
for i in range(3):
    (out / f"part_{i}.txt").write_text(f"line {i}\\n", encoding="utf-8")
print(sorted(p.name for p in out.glob("*.txt")))
print(sorted(str(p) for p in Path(".").rglob("*.txt"))[0], (out / "part_1.txt").read_text().strip())
""", expect=("['part_0.txt', 'part_1.txt', 'part_2.txt']", "line 1")),
    dict(name="os_walk_makedirs_shutil", profile=FS, code="""
import os, shutil
os.makedirs("project/src/pkg", exist_ok=True)
with open("project/src/pkg/mod.py", "w") as f:
    f.write("x = 1\\n")
shutil.copy("project/src/pkg/mod.py", "project/mod_copy.py")
shutil.copytree("project/src", "backup/src")
shutil.move("project/mod_copy.py", "project/moved.py")
for root, dirs, files in sorted(os.walk("project")):
    print(root, sorted(files))
print(os.path.exists("backup/src/pkg/mod.py"))
""", expect=("project/src/pkg ['mod.py']", "True")),
    dict(name="non_ascii_file_names", profile=FS, code="""
import os
os.makedirs("données", exist_ok=True)
for name in ("été.csv", "日本.txt", "📊report.md"):
    with open(os.path.join("données", name), "w", encoding="utf-8") as f:
        f.write(name)
print(sorted(os.listdir("données")))
print(open("données/été.csv", encoding="utf-8").read())
""", expect=("['été.csv', '日本.txt', '📊report.md']", "été.csv")),
    dict(name="csv_file_from_input", profile=FS, files={"sales.csv": SALES_CSV}, code="""
import csv
from collections import defaultdict
totals = defaultdict(float)
with open("sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["units"]) * float(row["price"])
for region, total in sorted(totals.items()):
    print(f"{region}: {total:.2f}")
with open("totals.csv", "w", newline="") as f:
    csv.writer(f).writerows(sorted(totals.items()))
""", expect=("East: 70.00", "North: 55.00")),
    dict(name="json_file_round_trip", profile=FS, code="""
import json
config = {"model": "rf", "params": {"n_estimators": 100}, "name": "expérience"}
with open("config.json", "w", encoding="utf-8") as f:
    json.dump(config, f, ensure_ascii=False, indent=2)
with open("config.json", encoding="utf-8") as f:
    print(json.load(f)["name"])
""", expect="expérience"),
    dict(name="sqlite_workspace_file", profile=FS, code="""
import sqlite3
with sqlite3.connect("inventory.db") as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS stock (item TEXT, qty INT)")
    conn.executemany("INSERT INTO stock VALUES (?, ?)", [("bolts", 40), ("nuts", 15)])
conn = sqlite3.connect("inventory.db")
print(conn.execute("SELECT SUM(qty) FROM stock").fetchone()[0])
conn.close()
import os
print(os.path.getsize("inventory.db") > 0)
""", expect=("55", "True")),
    dict(name="zip_archive", profile=FS, code="""
import zipfile, os
for n in ("a.txt", "b.txt"):
    open(n, "w").write(n * 10)
with zipfile.ZipFile("bundle.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.write("a.txt"); z.write("b.txt", arcname="sub/b.txt"); z.writestr("notes/é.txt", "x")
with zipfile.ZipFile("bundle.zip") as z:
    print(sorted(z.namelist()))
    z.extractall("unzipped")
print(sorted(os.listdir("unzipped")))
""", expect=("['a.txt', 'notes/é.txt', 'sub/b.txt']", "['a.txt', 'notes', 'sub']")),
    dict(name="tar_archive", profile=FS, code="""
import tarfile, os
os.makedirs("logs", exist_ok=True)
open("logs/app.log", "w").write("ok\\n")
with tarfile.open("logs.tar.gz", "w:gz") as tar:
    tar.add("logs")
with tarfile.open("logs.tar.gz", "r:gz") as tar:
    print(tar.getnames())
    tar.extractall("restored")
print(open("restored/logs/app.log").read().strip())
""", expect=("['logs', 'logs/app.log']", "ok")),
    dict(name="compressed_streams", profile=FS, code="""
import gzip, bz2, lzma
text = "compress me " * 1000
for mod, ext in ((gzip, "gz"), (bz2, "bz2"), (lzma, "xz")):
    with mod.open(f"data.{ext}", "wt") as f:
        f.write(text)
    with mod.open(f"data.{ext}", "rt") as f:
        assert f.read() == text
import os
print({ext: os.path.getsize(f"data.{ext}") < 1000 for ext in ("gz", "bz2", "xz")})
""", expect="{'gz': True, 'bz2': True, 'xz': True}"),
    dict(name="tempfile_usage", profile=FS, code="""
import tempfile, os
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "scratch.txt")
    with open(path, "w") as f:
        f.write("temporary")
    print(open(path).read(), os.path.isdir(tmp))
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("hello"); f.flush(); f.seek(0)
    print(f.read())
fd, name = tempfile.mkstemp()
os.close(fd); os.remove(name)
print("gettempdir:", os.path.isdir(tempfile.gettempdir()))
""", expect=("temporary True", "hello", "gettempdir: True")),
    dict(name="logging_file_handler", profile=FS, code="""
import logging
logger = logging.getLogger("pipeline")
handler = logging.FileHandler("pipeline.log", encoding="utf-8")
handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
logger.addHandler(handler)
logger.setLevel(logging.INFO)
logger.info("step 1 done – ✓")
handler.close()
print(open("pipeline.log", encoding="utf-8").read().strip())
""", expect="INFO step 1 done – ✓"),
    dict(name="file_ops_stat_rename_remove", profile=FS, code="""
import os, shutil
open("draft.txt", "w").write("v1")
os.rename("draft.txt", "final.txt")
st = os.stat("final.txt")
print(st.st_size, os.path.getsize("final.txt"), os.access("final.txt", os.R_OK))
os.makedirs("trash/deep", exist_ok=True)
shutil.rmtree("trash")
os.remove("final.txt")
print(sorted(os.listdir(".")))
""", expect=("2 2 True", "[]")),
    dict(name="configparser_ini", profile=FS, code="""
import configparser
cfg = configparser.ConfigParser()
cfg["database"] = {"host": "localhost", "port": "5432"}
cfg["app"] = {"debug": "true"}
with open("settings.ini", "w") as f:
    cfg.write(f)
read = configparser.ConfigParser()
read.read("settings.ini")
print(read["database"].getint("port"), read.getboolean("app", "debug"))
""", expect="5432 True"),
    dict(name="future_annotations_dataclass", profile=B, code="""
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

print(Node("a", [Node("b", [Node("c")])]).depth())
""", expect="3"),
    dict(name="asyncio_gather_and_timeouts", profile=B, code="""
import asyncio

async def fetch(i: int) -> int:
    await asyncio.sleep(0.01 * (i % 3))
    return i * i

async def slow():
    await asyncio.sleep(10)

async def main():
    results = await asyncio.gather(*(fetch(i) for i in range(10)))
    try:
        await asyncio.wait_for(slow(), timeout=0.05)
    except asyncio.TimeoutError:
        print("timed out as expected")
    q = asyncio.Queue()
    async def producer():
        for i in range(5):
            await q.put(i)
        await q.put(None)
    async def consumer():
        total = 0
        while (item := await q.get()) is not None:
            total += item
        return total
    _, total = await asyncio.gather(producer(), consumer())
    return sum(results), total

print(asyncio.run(main()))
""", expect=("timed out as expected", "(285, 10)")),
    dict(name="asyncio_tasks_and_events", profile=B, code="""
import asyncio, contextvars
request_id = contextvars.ContextVar("request_id", default="-")

async def worker(name, event, out):
    request_id.set(name)
    await event.wait()
    out.append(f"{name}:{request_id.get()}")

async def main():
    event, out = asyncio.Event(), []
    tasks = [asyncio.create_task(worker(f"w{i}", event, out)) for i in range(3)]
    await asyncio.sleep(0)
    event.set()
    await asyncio.wait(tasks)
    async with asyncio.timeout(1):
        await asyncio.sleep(0.001)
    print(sorted(out))

asyncio.run(main())
""", expect="['w0:w0', 'w1:w1', 'w2:w2']"),
    dict(name="doctest_testmod", profile=B, code="""
def mean(xs):
    \"\"\"Arithmetic mean.

    >>> mean([1, 2, 3])
    2.0
    >>> mean([])
    Traceback (most recent call last):
    ...
    ZeroDivisionError: division by zero
    \"\"\"
    return sum(xs) / len(xs)

import doctest
print(doctest.testmod())
""", expect="TestResults(failed=0, attempted=2)"),
    dict(name="email_mime_message", profile=B, code="""
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
msg = MIMEMultipart()
msg["Subject"] = "Report"
msg["To"] = "team@example.com"
msg.attach(MIMEText("Numbers attached.", "plain"))
text = msg.as_string()
print("Subject: Report" in text, "Numbers attached." in text)
""", expect="True True"),
    dict(name="concurrent_futures_cpu_count", profile=B, code="""
import multiprocessing, os
from concurrent.futures import ThreadPoolExecutor, as_completed
print("cpus known:", (multiprocessing.cpu_count() or 0) >= 1 and (os.cpu_count() or 0) >= 1)
try:
    with ThreadPoolExecutor(max_workers=2) as pool:
        print(sum(f.result() for f in as_completed([pool.submit(pow, 2, 10)])))
except RuntimeError as e:
    print("threads unavailable:", e)
""", expect="cpus known: True"),
    dict(name="urllib_parse_and_request_objects", profile=B, code="""
from urllib.parse import urlencode, urlparse
from urllib.request import Request
from http import HTTPStatus
req = Request("https://api.example.com/v1/items?" + urlencode({"q": "café", "n": 3}),
              headers={"Accept": "application/json"})
print(urlparse(req.full_url).netloc, req.get_method(), HTTPStatus.NOT_FOUND.phrase)
""", expect="api.example.com GET Not Found"),
    dict(name="pickle_to_file", profile=FS, code="""
import pickle
model = {"weights": [0.1, 0.2], "bias": 0.5, "labels": {"a", "b"}}
with open("model.pkl", "wb") as f:
    pickle.dump(model, f)
with open("model.pkl", "rb") as f:
    loaded = pickle.load(f)
print(loaded["bias"], sorted(loaded["labels"]))
""", expect="0.5 ['a', 'b']"),
    dict(name="chdir_into_subdir", profile=FS, code="""
import os
os.makedirs("work/run1", exist_ok=True)
os.chdir("work/run1")
open("result.txt", "w").write("42")
os.chdir("../..")
print(open("work/run1/result.txt").read(), os.path.abspath(".") == os.getcwd())
""", expect="42 True"),
    dict(name="file_shutil_copy2_metadata", profile=FS, code="""
import shutil, os
open("src.bin", "wb").write(bytes(range(256)))
shutil.copy2("src.bin", "dst.bin")
shutil.copymode("src.bin", "dst.bin")
os.chmod("dst.bin", 0o600)
print(open("dst.bin", "rb").read() == bytes(range(256)), oct(os.stat("dst.bin").st_mode & 0o777))
print(shutil.disk_usage(".").free > 0)
""", expect=("True 0o600", "True")),
]
