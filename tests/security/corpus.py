"""tests/security/corpus.py — escape attempts, written the way a hostile user would write them.

Each case: the code (with {pwn}, {canary}, {port} filled in per run), the statuses it may end
in, and what must be absent afterwards. Every case is also checked for the effects no job may
ever have: a file created on the host ({pwn}), the canary file's content or the executor's
secret environment variable in anything returned, a connection to the test's listener.

Statuses: "violation" = security_violation (seccomp trap or a blocked audit event); "error" =
the code raised (ImportError, PermissionError, NameError...), which is the Python layer saying
no. Where either can happen depending on the route taken, both are listed; the absent effect is
what the case is really about. The Python layer refuses operations rather than
modules: `import os` works and `os.system` is the violation, so cases that used to end at the
import end at the operation (and test_os_layers.py shows the OS layers stop each of them with
the Python layer off).
"""

V = "security_violation"
E = "error"

CASES = [
    # --- dunder and __subclasses__ walks to os.system -------------------------------------
    ("subclasses_wrap_close_system",
     "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
     ".__init__.__globals__['system']('touch {pwn}')", {V}),
    ("subclasses_mro_builtin_importer",
     "imp = [c for c in ().__class__.__mro__[-1].__subclasses__() if c.__name__ == 'BuiltinImporter'][0]\n"
     "imp.load_module('posix').system('touch {pwn}')", {V, E}),
    ("subclasses_globals_sys_modules_os",
     "for c in object.__subclasses__():\n"
     "    g = getattr(getattr(c, '__init__', None), '__globals__', None)\n"
     "    if isinstance(g, dict) and 'sys' in g:\n"
     "        g['sys'].modules['os'].system('touch {pwn}')\n"
     "        break", {V}),
    ("subclasses_real_builtins_open",
     "for c in object.__subclasses__():\n"
     "    g = getattr(getattr(c, '__init__', None), '__globals__', None)\n"
     "    if isinstance(g, dict) and '__builtins__' in g:\n"
     "        b = g['__builtins__']\n"
     "        b = b if isinstance(b, dict) else b.__dict__\n"
     "        print(b['open']('{canary}').read())\n"
     "        break", {V}),
    ("subclasses_real_import_os_listdir",
     "for c in object.__subclasses__():\n"
     "    g = getattr(getattr(c, '__init__', None), '__globals__', None)\n"
     "    if isinstance(g, dict) and '__builtins__' in g:\n"
     "        b = g['__builtins__']\n"
     "        b = b if isinstance(b, dict) else b.__dict__\n"
     "        print(b['__import__']('os').listdir('/'))\n"
     "        break", {V}),
    ("subclasses_fileio_passwd",
     "io = [c for c in object.__subclasses__() if c.__name__ == '_IOBase'][0]\n"
     "f = [c for c in io.__subclasses__() if 'RawIOBase' in c.__name__][0]\n"
     "print([k for k in f.__subclasses__() if k.__name__ == 'FileIO'][0]('/etc/passwd').read())",
     {V, E}),
    ("catch_warnings_module_builtins",
     "w = [c for c in object.__subclasses__() if c.__name__ == 'catch_warnings'][0]()\n"
     "w._module.__builtins__['__import__']('os').system('touch {pwn}')", {V, E}),
    ("builtins_dict_import",
     "__builtins__['__import__']('os').system('touch {pwn}')", {V}),
    ("builtins_dict_open",
     "print(__builtins__['open']('{canary}').read())", {E}),
    ("getattr_builtins_import",
     "getattr(__builtins__, '__import__')('os')", {E}),
    ("lambda_globals_builtins",
     "(lambda: 0).__globals__['__builtins__']['__import__']('subprocess').run(['touch', '{pwn}'])", {V}),
    ("type_subclasses_of_type",
     "print([c for c in type.__subclasses__(type)])\n"
     "[c for c in object.__subclasses__() if c.__name__ == '_wrap_close'][0]"
     ".__init__.__globals__['popen']('touch {pwn}')", {V, E}),

    # --- __import__ and importlib tricks ----------------------------------------------------
    # os, sys, subprocess & co. import: what they would do is refused instead
    ("import_os", "import os\nos.system('touch {pwn}')", {V}),
    ("import_sys", "import sys\nprint(len(sys.modules) > 10)", {"ok"}),
    ("import_importlib",  # import_module skips builtins.__import__: the operation is refused
     "import importlib\nimportlib.import_module('ctypes').CDLL(None).system(b'touch {pwn}')", {V, E}),
    ("dunder_import_os", "__import__('os').system('touch {pwn}')", {V}),
    ("from_os_import", "from os import system\nsystem('touch {pwn}')", {V}),
    ("import_subprocess", "import subprocess\nsubprocess.run(['touch', '{pwn}'])", {V}),
    # a refusal the code catches leaves the status to the code (its security_events list it:
    # test_security_events.py); what it was after still does not happen
    ("subprocess_caught", "import subprocess\ntry:\n    subprocess.run(['touch', '{pwn}'])\n"
     "except PermissionError:\n    print('refused')", {"ok"}),
    ("os_popen", "import os\nprint(os.popen('touch {pwn}').read())", {V}),
    ("import_builtins", "import builtins\nbuiltins.open('{canary}')", {V, E}),
    ("import_underscore_imp", "import _imp", {E}),
    ("import_frozen_importlib", "import _frozen_importlib", {E}),
    ("import_ctypes", "import ctypes\nctypes.CDLL(None).system(b'touch {pwn}')", {E}),
    ("relative_import", "from . import os", {E}),
    ("import_with_fromlist_submodule",
     "from multiprocessing import sharedctypes\nsharedctypes.ctypes.CDLL(None).system(b'touch {pwn}')",
     {E}),
    ("math_loader_load_posix",
     "import math\nmath.__loader__.load_module('posix').system('touch {pwn}')", {V, E}),
    ("json_spec_loader",
     "import json\nprint(json.__spec__.loader.load_module('os').system('touch {pwn}'))", {V, E}),
    # the one submodule of an allowed package never preloaded (it would load ctypes)
    ("allowed_module_not_preloaded",
     "import multiprocessing.sharedctypes as s\ns.ctypes.CDLL(None).system(b'touch {pwn}')", {E}),

    # --- modules reached through other modules ---------------------------------------------
    ("typing_sys_os_system", "import typing\ntyping.sys.modules['os'].system('touch {pwn}')", {V}),
    ("uuid_os_system", "import uuid\nuuid.os.system('touch {pwn}')", {V}),
    ("uuid_os_listdir", "import uuid\nprint(uuid.os.listdir('/'))", {V}),
    ("random_os_system", "import random\nrandom._os.system('touch {pwn}')", {V}),
    ("calendar_sys_popen",
     "import calendar\ncalendar.sys.modules['os'].popen('touch {pwn}').read()", {V, E}),
    ("elementtree_sys_os",
     "import xml.etree.ElementTree as ET\nET.sys.modules['os'].system('touch {pwn}')", {V}),
    ("uuid_os_execv", "import uuid\nuuid.os.execv('/bin/sh', ['sh', '-c', 'touch {pwn}'])", {V}),
    ("uuid_os_posix_spawn",
     "import uuid\nuuid.os.posix_spawn('/bin/touch', ['touch', '{pwn}'], {{}})", {V}),
    ("uuid_os_open_passwd", "import uuid\nprint(uuid.os.read(uuid.os.open('/etc/passwd', 0), 100))", {V}),
    ("posix_module_system", "import typing\ntyping.sys.modules['posix'].system('touch {pwn}')", {V}),
    ("subprocess_via_sys_modules",
     "import typing\nsp = typing.sys.modules.get('subprocess')\n"
     "sp.run(['touch', '{pwn}']) if sp else typing.sys.modules['os'].system('touch {pwn}')", {V}),
    ("shutil_via_sys_modules",
     "import typing\nsh = typing.sys.modules.get('shutil')\n"
     "print(sh.copy('{canary}', '{pwn}') if sh else typing.sys.modules['os'].listdir('/'))", {V}),

    # --- str.format attribute walks ----------------------------------------------------------
    ("format_globals_environ", "import uuid\nprint('{{0.__globals__[os].environ}}'.format(uuid.uuid4))", {"ok"}),
    ("format_json_decoder_globals", "import json\nprint('{{0.__init__.__globals__}}'.format(json.JSONDecoder))", {"ok"}),
    ("format_subclasses", "print('{{0.__class__.__base__.__subclasses__}}'.format(()))", {"ok"}),
    ("format_map_walk", "print('{{x.__class__.__mro__}}'.format_map({{'x': 1}}))", {"ok"}),

    # --- generator and frame escapes ---------------------------------------------------------
    # frames are no longer refused: with sys importable they hide nothing, and
    # traceback and inspect walk them; what an attacker does with the runner's globals is
    # still refused where it touches the system
    ("generator_gi_frame_back",
     "def g():\n    yield 1\nx = g()\nnext(x)\nprint(x.gi_frame.f_back)", {"ok"}),
    ("traceback_frame_globals",
     "try:\n    1 / 0\nexcept Exception as e:\n"
     "    f = e.__traceback__.tb_frame.f_back\n    print(f.f_globals['_real_import']('os').listdir('/'))", {V, E}),
    ("frame_walk_to_runner_then_os",
     "import sys\nf = sys._getframe(1)\nf.f_globals['_real_import']('os').system('touch {pwn}')", {V}),
    ("coroutine_cr_frame", "async def c():\n    pass\nx = c()\nprint(x.cr_frame is not None)", {"ok"}),
    ("genexpr_gi_frame", "print(len((i for i in []).gi_frame.f_globals))", {"ok"}),
    ("getframe_runner_globals",
     "import typing\nf = typing.sys._getframe(1)\nf.f_globals['_real_import']('os').system('touch {pwn}')", {V}),
    ("getframe_builtins_open",
     "import typing\nb = typing.sys._getframe(0).f_builtins\nprint(b)\n"
     "import json\nprint(json.__builtins__['open']('{canary}').read())", {V}),
    ("getframe_snakepit_write_other",
     "import typing\nsp = typing.sys._getframe(1).f_globals['_snakepit']\nsp.write(1, 'own output only')",
     {"ok", E}),

    # --- open and /proc/self -----------------------------------------------------------------
    ("open_etc_passwd", "print(open('/etc/passwd').read())", {E}),
    ("open_canary", "print(open('{canary}').read())", {E}),
    ("open_proc_environ", "print(open('/proc/self/environ').read())", {E}),
    ("io_open_passwd", "import io\nprint(io.open('/etc/passwd').read())", {V}),
    ("io_fileio_proc_mem", "import io\nprint(io.FileIO('/proc/self/mem').read(10))", {V}),
    ("io_open_canary", "import io\nprint(io.open('{canary}').read())", {V}),
    ("io_open_write_host_file", "import io\nio.open('{pwn}', 'w').write('x')", {V}),
    ("os_stat_passwd", "import uuid\nprint(uuid.os.stat('/etc/passwd'))", {E}),
    ("os_listdir_proc", "import uuid\nprint(uuid.os.listdir('/proc'))", {V}),
    ("os_readlink_proc_exe", "import uuid\nprint(uuid.os.readlink('/proc/self/exe'))", {E, V}),
    ("os_scandir_root", "import uuid\nprint(list(uuid.os.scandir('/')))", {V}),
    ("zoneinfo_path_traversal",
     "import zoneinfo\nprint(zoneinfo.ZoneInfo('../../../../etc/passwd'))", {E, V}),

    # --- environment reads -------------------------------------------------------------------
    ("environ_dump", "import uuid\nprint(dict(uuid.os.environ))", {"ok"}),
    ("environ_getenv_secret", "import uuid\nprint(uuid.os.getenv('SNAKEPIT_TEST_SECRET'))", {"ok"}),
    ("environb_dump", "import uuid\nprint(uuid.os.environb)", {"ok"}),
    ("proc_environ_os_open", "import uuid\nprint(uuid.os.read(uuid.os.open('/proc/self/environ', 0), 4096))", {V}),
    ("proc_parent_environ", "import uuid\nprint(uuid.os.read(uuid.os.open('/proc/1/environ', 0), 4096))", {V}),

    # --- fork and thread bombs ---------------------------------------------------------------
    ("fork_bomb", "import uuid\nwhile True:\n    uuid.os.fork()", {V}),
    ("forkpty", "import uuid\nuuid.os.forkpty()", {V}),
    ("thread_bomb",
     "import typing\nT = typing.sys.modules['threading'].Thread\n"
     "for i in range(1000):\n    T(target=lambda: None).start()", {E, V}),
    ("thread_start_new", "import typing\ntyping.sys.modules['_thread'].start_new_thread(print, ('x',))", {E, V}),
    ("thread_start", "import threading\nthreading.Thread(target=print).start()", {E}),

    # --- sockets ------------------------------------------------------------------------------
    ("socket_connect_listener",
     "import typing\ns = typing.sys.modules['socket'].socket()\ns.connect(('127.0.0.1', {port}))", {V}),
    ("raw_socket_module",
     "import typing\ns = typing.sys.modules['_socket'].socket()\ns.connect(('127.0.0.1', {port}))", {V}),
    ("socket_dns_lookup", "import typing\nprint(typing.sys.modules['socket'].gethostbyname('example.com'))", {V, E}),
    ("import_socket_connect", "import socket\nsocket.create_connection(('127.0.0.1', {port}))", {V}),
    ("socket_caught",
     "import socket\ntry:\n    socket.socket().connect(('127.0.0.1', {port}))\nexcept OSError:\n    pass", {"ok"}),
    # a connected AF_UNIX pair is asyncio's self-pipe and reaches nothing (allowed); a pair of
    # another family, a new AF_UNIX socket, and sending to an address are the network
    ("socketpair_inet",
     "import typing\ns = typing.sys.modules['socket']\nprint(s.socketpair(s.AF_INET))", {V}),
    ("socket_unix_new",
     "import typing\ns = typing.sys.modules['socket']\ns.socket(s.AF_UNIX).connect('/dev/log')", {V}),
    ("socketpair_sendto_address",
     "import socket\na, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
     "a.sendto(b'<1>pwned', '/dev/log')", {V}),
    ("socketpair_send_fd",
     "import socket\na, b = socket.socketpair()\nsocket.send_fds(a, [b'x'], [0])", {V}),

    # --- signals to the parent and to other jobs --------------------------------------------
    # each job is pid 1 of its own pid namespace: its parent is out of sight (getppid
    # is 0, kill(0) its own group) and pid 1 is the job itself, so these end the job alone
    ("kill_parent", "import uuid\nuuid.os.kill(uuid.os.getppid(), 9)", {V, E}),
    ("kill_everything", "import uuid\nuuid.os.kill(-1, 9)", {V}),
    ("killpg_zero", "import uuid\nuuid.os.killpg(0, 9)", {V, E}),
    ("kill_zygote_pid1", "import uuid\nuuid.os.kill(1, 15)", {V, E}),
    ("kill_pid_2", "import os\nos.kill(2, 9)", {V}),
    ("pthread_kill",
     "import typing, math\nsig = typing.sys.modules.get('_signal') or math.__loader__.load_module('_signal')\n"
     "sig.pthread_kill(1, 9)", {V, E}),
    ("sigsys_handler_replace",
     "import typing, math\nsig = typing.sys.modules.get('_signal') or math.__loader__.load_module('_signal')\n"
     "sig.signal(31, sig.SIG_IGN)\ntyping.sys.modules['socket'].socket()", {V, E}),

    # --- writes to inherited fds -------------------------------------------------------------
    ("write_fd1", "import uuid\nuuid.os.write(1, b'INJECTED-LOG-LINE level=error')", {E}),
    ("write_fd2", "import uuid\nuuid.os.write(2, b'INJECTED-LOG-LINE level=error')", {E}),
    ("write_every_fd",
     "import uuid\nn = 0\nfor fd in range(256):\n    try:\n        uuid.os.write(fd, b'INJECTED-LOG-LINE')\n"
     "        n += 1\n    except OSError:\n        pass\nprint('wrote to', n, 'fds')",
     {"ok", E, "security_violation"}),  # the wake socket among them traps (child/wake.h)
    ("original_stdout", "import typing\ntyping.sys.__stdout__.write('INJECTED-LOG-LINE')\ntyping.sys.__stdout__.flush()", {E}),

    # --- forged results -------------------------------------------------------------------------
    ("forge_status_lost",
     "import typing\nsp = typing.sys._getframe(1).f_globals['_snakepit']\nsp.finish('lost')\n"
     "import uuid\nuuid.os._exit(0)", {E, "ok"}),
    ("forge_protocol_bytes", "print('{{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {{}}}}')", {"ok"}),
    ("lone_surrogate_output", "print('\\udcff\\ud800 and \\x00 nul')", {"ok"}),

    # --- exits ----------------------------------------------------------------------------------
    ("os_exit", "import uuid\nprint('before')\nuuid.os._exit(0)", {"ok"}),  # a process that ended well
    ("sys_exit_zero", "import typing\ntyping.sys.exit(0)", {"ok"}),
    ("system_exit_code", "raise SystemExit(3)", {E}),
    ("builtin_exit", "exit()", {"ok"}),
    ("keyboard_interrupt", "raise KeyboardInterrupt", {E}),
    ("os_abort", "import uuid\nuuid.os.abort()", {E, "memory_limit"}),

    # --- recursion and parser bombs ---------------------------------------------------------
    ("recursion", "def f():\n    f()\nf()", {E}),
    ("eval_nested_parens", "eval('(' * 200000 + ')' * 200000)", {E}),
    ("code_nested_brackets", "x = " + "[" * 100000 + "]" * 100000, {"syntax_error", E, "memory_limit"}),
    ("json_nested", "import json\njson.loads('[' * 100000 + ']' * 100000)", {E}),
    ("deep_c_recursion",
     "import typing\ntyping.sys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1)\nf(0)",
     {E, "memory_limit", "timeout", "cpu_limit"}),

    # --- memory bombs ----------------------------------------------------------------------------
    ("bytes_bomb", "x = b'\\0' * (4 * 1024 ** 3)", {"memory_limit"}),
    ("list_bomb", "x = [0] * (10 ** 9)", {"memory_limit"}),
    ("append_bomb", "s = []\nwhile True:\n    s.append(' ' * 10 ** 6)", {"memory_limit"}),
    ("bigint_bomb", "x = 10 ** (10 ** 10)", {"memory_limit", "cpu_limit", "timeout"}),

    # --- output floods ---------------------------------------------------------------------------
    ("print_flood", "while True:\n    print('flood' * 100)", {"output_limit"}),
    ("one_huge_print", "print('x' * 10 ** 7)", {"output_limit"}),
    ("stderr_flood", "import typing\nwhile True:\n    typing.sys.stderr.write('e' * 1000)", {"output_limit"}),

    # --- time ------------------------------------------------------------------------------------
    ("sleep_past_deadline", "import time\ntime.sleep(100)", {"timeout"}),
    ("busy_loop", "while True:\n    pass", {"timeout", "cpu_limit"}),
    ("many_short_sleeps", "import time\nfor i in range(1000):\n    time.sleep(0.05)", {"timeout"}),

    # --- interpreter internals -------------------------------------------------------------------
    ("code_replace_bytecode",
     "c = (lambda: 0).__code__\nc2 = c.replace(co_code=b'\\x00' * 20)\nprint(c2)", {V}),
    ("marshal_loads", "import typing\ntyping.sys.modules['marshal'].loads(b'\\xe3' + b'\\0' * 40)", {V}),
    ("gc_get_objects", "import typing\nprint(len(typing.sys.modules['gc'].get_objects()))", {V}),
    ("gc_get_referrers", "import typing\nprint(typing.sys.modules['gc'].get_referrers(print))", {V}),
    ("current_frames", "import typing\nprint(typing.sys._current_frames())", {V}),
    ("settrace_runner",
     "import typing\ntyping.sys.settrace(lambda *a: None)\nimport uuid\nuuid.os.system('touch {pwn}')", {V}),
]

# --- the new powers of python.data_science: a workspace to write in, numpy's view of
# the process's memory, pickles, matplotlib writing files. Run against that profile only. -----
# A protocol-0 pickle that calls os.system, and one that calls builtins.eval (braces doubled
# for str.format).
_PICKLE_OS = "b\"cos\\nsystem\\n(S'touch {pwn}'\\ntR.\""
_PICKLE_EVAL = "b\"cbuiltins\\neval\\n(S'print(42)'\\ntR.\""

WORKSPACE_CASES = [
    ("ws_write_host_file", "open('{pwn}', 'w').write('x')", {V}),
    ("ws_write_relative_escape", "open('../../../..{pwn}', 'w').write('x')", {V}),
    ("ws_pathlib_absolute_write", "import pathlib\npathlib.Path('{pwn}').write_text('x')", {V}),
    ("ws_write_sibling_root", "open('/work/x', 'w').write('x')", {V}),
    ("ws_symlink_to_canary",
     "import pathlib\npathlib.Path('l').symlink_to('{canary}')\nprint(open('l').read())", {V}),
    ("ws_hardlink_to_canary",
     "import pathlib\npathlib.Path('h').hardlink_to('{canary}')\nprint(open('h').read())", {V}),
    ("ws_numpy_os_symlink",
     "import numpy as np\nos = np.lib.npyio.os\nos.symlink('{canary}', 'l')\nprint(open('l').read())", {V}),
    ("ws_mkfifo", "import numpy as np\nnp.lib.npyio.os.mkfifo('p')", {V}),
    ("ws_mknod_device", "import numpy as np\nnp.lib.npyio.os.mknod('d', 0o20666, 0x0103)", {V}),
    ("ws_chdir_out", "import numpy as np\nnp.lib.npyio.os.chdir('/')\nprint(open('etc/passwd').read())", {V}),
    ("ws_fill_the_disk",
     "i = 0\nwhile True:\n    open('f%d' % i, 'wb').write(b'x' * (4 << 20))\n    i += 1", {E}),
    ("ws_inode_exhaustion", "i = 0\nwhile True:\n    open('e%d' % i, 'w').close()\n    i += 1", {E}),
    ("ws_one_huge_file", "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))",
     {E}),
    ("np_load_pickle_os_system",
     "import numpy as np\nopen('evil.pkl', 'wb').write(" + _PICKLE_OS + ")\n"
     "np.load('evil.pkl', allow_pickle=True)", {V}),
    ("pandas_read_pickle_eval",
     "import pandas as pd\nopen('evil.pkl', 'wb').write(" + _PICKLE_EVAL + ")\n"
     "pd.read_pickle('evil.pkl')", {V}),
    ("np_ctypeslib_system",
     "import numpy as np\nct = np.ctypeslib.ctypes\nct.CDLL(None).system(b'touch {pwn}')", {V, E}),
    ("np_core_internal_ctypes_libc",
     "import numpy as np\nct = np.core._internal.ctypes\nlibc = ct.CDLL('libc.so.6')\n"
     "libc.execve(b'/bin/touch', None, None)", {V, E}),
    ("np_memory_write_disarms_python_layer_then_os",
     # as_strided can write anywhere in the process: assume the Python layer is gone and go for
     # the OS: seccomp still traps the fork and exec ctypes would need
     "import numpy as np\nct = np.core._internal.ctypes\n"
     "ct.CDLL(None).fork()", {V, E}),
    ("np_as_strided_wild_read",
     "import numpy as np\nfrom numpy.lib.stride_tricks import as_strided\n"
     "a = np.zeros(1, np.uint8)\nprint(as_strided(a, shape=(2,), strides=(1 << 46,))[1])",
     {"memory_limit", E}),
    ("np_fromfile_proc_environ",
     "import numpy as np\nprint(np.fromfile('/proc/self/environ', dtype=np.uint8).tobytes())", {V}),
    ("pd_read_csv_etc_passwd", "import pandas as pd\nprint(pd.read_csv('/etc/passwd', sep=':'))", {V}),
    ("pd_read_csv_url", "import pandas as pd\nprint(pd.read_csv('http://127.0.0.1:{port}/x.csv'))",
     {V, E}),
    ("pd_to_csv_host_path", "import pandas as pd\npd.DataFrame({{'a': [1]}}).to_csv('{pwn}')", {V, E}),
    ("mpl_savefig_host_path",
     "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('{pwn}.png')", {V}),
    ("mpl_rcparams_savefig_directory",
     "import matplotlib as mpl\nimport matplotlib.pyplot as plt\n"
     "mpl.rcParams['savefig.directory'] = '/tmp'\nplt.plot([1])\nplt.savefig('/tmp/sp-x.png')", {V}),
    ("mpl_font_from_canary",
     "from matplotlib import font_manager\nprint(font_manager.FontProperties(fname='{canary}').get_name())",
     {V, E}),
    ("sympy_parse_expr_eval",
     "from sympy.parsing.sympy_parser import parse_expr\n"
     "parse_expr(\"__import__('os').system('touch {pwn}')\")", {V, E}),
    ("sympy_lambdify_exec",
     "import sympy as sp\nx = sp.symbols('x')\nf = sp.lambdify(x, x, modules=[{{'sin': print}}])\n"
     "import numpy as np\nnp.lib.npyio.os.system('touch {pwn}')", {V}),
    ("scipy_io_loadmat_host_file", "from scipy import io\nio.loadmat('{canary}')", {V}),
]


def _returned_text(r):
    return "\n".join(str(r.get(k) or "") for k in ("stdout", "stderr", "result", "variables")) + \
        str(r.get("error") or "")


def assert_contained(executor, listener, r, pwn, expected):
    """The attack ended as expected and none of the effects it was after happened."""
    import os
    text = _returned_text(r)
    assert r["status"] in expected, (r["status"], r.get("error"), r.get("exit"))
    assert not os.path.exists(pwn), "the attack created a file on the host"
    assert executor.secret not in text, "the executor's environment leaked"
    assert "CANARY-" not in text, "the canary file leaked"
    assert "root:x:0:0" not in text, "/etc/passwd leaked"
    assert not listener.contacted(), "the attack reached the network"
    if r["status"] == "security_violation":
        assert r["exit"]["syscall"], "a violation names the syscall or audit event it stopped"
    for f in r.get("files") or ():
        assert b"CANARY-" not in f["data"] and b"root:x:0:0" not in f["data"], "a file leaked"
    assert executor.alive()
