"""The findings of the attack run against the landed farm (issue 14), each with the attack that
worked before its fix. Where an attack needs raw syscalls it runs with the Python layer switched
off (in python.data_science numpy can disarm it from inside anyway): what is tested is that the
OS layers hold on their own."""
import pytest

from harness import Executor

DS = "python.data_science"


@pytest.fixture(scope="module")
def raw():
    """Every layer but the Python one: ctypes is the attacker's."""
    ex = Executor(disable=("python",), slots=2, profiles=DS)
    yield ex
    ex.close()


# Raw rt_sigaction through ctypes. A handler installed with glibc's signal() brings glibc's
# restorer (x86-64 needs SA_RESTORER), which a raw call has to name too; getpid is a harmless
# function to point a handler at.
_SIGACTION = """
import ctypes
libc = ctypes.CDLL(None)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_ulong]
libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
class SA(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("flags", ctypes.c_ulong),
                ("restorer", ctypes.c_void_p), ("mask", ctypes.c_ulong)]
getpid = ctypes.cast(libc.getpid, ctypes.c_void_p).value
libc.signal(10, getpid)
usr1 = SA()
assert libc.syscall(13, 10, None, ctypes.byref(usr1), 8) == 0
act = SA(getpid, usr1.flags | 4, usr1.restorer, 0)
"""


def test_a_sigsys_handler_with_a_high_bit_in_the_signal_number_ends_the_job(raw):
    # Before: the rule compared all 64 bits, the kernel reads 32; the handler was installed,
    # the trapped socket() returned its own number and the job ended ok, uncounted.
    r = raw.run(_SIGACTION + "print(libc.syscall(13, 31 | 1 << 32, ctypes.byref(act), None, 8))\n"
                "print(libc.syscall(41, 2, 1, None, 0))\n", service=DS)
    assert r["status"] == "security_violation", (r["status"], r["stdout"], r.get("error"))
    assert r["exit"]["syscall"] == "rt_sigaction"
    assert r["stdout"] == ""


@pytest.mark.parametrize("signo", ["31", "2 | 1 << 32"])
def test_setting_sigsys_or_any_handler_with_high_bits_ends_the_job(raw, signo):
    r = raw.run(_SIGACTION + "print(libc.syscall(13, %s, ctypes.byref(act), None, 8))\n" % signo,
                service=DS)
    assert r["status"] == "security_violation" and r["exit"]["syscall"] == "rt_sigaction"


def test_reading_the_sigsys_disposition_does_not_end_the_job(raw):
    # Before: any rt_sigaction naming SIGSYS was killed, reading included (import _signal does).
    r = raw.run(_SIGACTION + "old = SA()\nprint(libc.syscall(13, 31, None, ctypes.byref(old), 8))\n"
                "print(old.handler != 0)\nprint(libc.syscall(13, 10, ctypes.byref(act), None, 8))",
                service=DS)
    assert r["status"] == "ok", (r["status"], r.get("error"))
    assert r["stdout"] == "0\nTrue\n0\n"


def test_a_trapped_syscall_after_it_is_still_a_violation(raw):
    r = raw.run(_SIGACTION + "old = SA()\nlibc.syscall(13, 31, None, ctypes.byref(old), 8)\n"
                "print(libc.syscall(41, 2, 1, None, 0))", service=DS)
    assert r["status"] == "security_violation" and r["exit"]["syscall"] == "socket"
