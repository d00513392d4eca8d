# executor-node/python/byvalue.py — a session's own functions and classes in its snapshots, by value.
#
# Plain pickle saves a function or a class by name: "__main__.inc", which a restored session
# cannot find, since it never ran the cell that defined it. Here a snapshot carries them by
# value instead, so that a session resumed on another executor (or restored into a new session)
# has them back, closures, defaults, methods and class attributes included:
#
#   - a function defined in the session becomes (the cell's source, where in it its code is,
#     its defaults, closure, annotations, attributes); restoring compiles that source again
#     with CPython's own compiler, exactly as the runner compiled the cell, takes the matching
#     code object out of the result, and binds a new function to the session's own globals;
#   - a class defined in the session becomes a skeleton (name, bases, metaclass) and its
#     attributes, with cloudpickle's class reduction (Debian's python3-cloudpickle) and its
#     class tracker, so that every restored instance shares one class; dataclasses and named
#     tuples are made again by their own factories, from their parameters;
#   - everything else is pickled as before, by reference, and the profile's restricted
#     unpickler (policy.c) still decides what a restore may name.
#
# What restoring may construct, and why that is safe. The unpickler may name, besides the
# profile's data modules, only the reconstructors below (_sp_*): they build functions whose
# globals are always the session's own (never a dict the pickle chose: a function with other
# globals would find the interpreter's unguarded builtins), code only by compiling source text
# (never from bytes: crafted bytecode is how a Python-level guard is bypassed, which is why the
# audit hook refuses code.__new__ and marshal), and classes with types.new_class. That is
# nothing a cell cannot do: a cell compiles and runs source, defines functions and classes.
# And restoring happens only inside the tenant's own session, after every sandbox layer is in
# place, under the audit hook: a snapshot is the tenant's own data, and the worst it can do is
# what the tenant's own cell could. The bytes of a code object do travel in the snapshot, but
# only to tell which code object of the recompiled cell is the one: they are compared, never
# executed.
#
# What cannot be captured is listed with why (why_not): a running generator or coroutine (a
# paused frame), an open file, socket, pipe or database connection (a descriptor of this
# process), a thread or lock, a function whose code was not compiled from one of the session's
# cells (exec() of a string, a library that made it).
import ast
import dataclasses
import pickle
import sys
import types

try:  # Debian's python3-cloudpickle, in dist-packages, which only some profiles' imports see
    _DIST = "/usr/lib/python3/dist-packages"
    _added = _DIST not in sys.path
    if _added:
        sys.path.append(_DIST)
    try:
        from cloudpickle import cloudpickle as _cp
        from cloudpickle import cloudpickle_fast as _cpf
    finally:
        if _added:
            sys.path.remove(_DIST)
except ImportError:  # an executor without it saves them by name, as plain pickle does
    _cp = _cpf = None

_FILENAME = "<snakepit>"   # the runner's: every cell is compiled under it (runner._FILENAME)
_CELLS_MAX_BYTES = 8 << 20  # the sources kept to find code in (the newest, whole cells)
_cells = []                 # the session's cells' sources, oldest first
_cells_bytes = [0]
_globals = [None]           # the session's globals: every restored function's


def use_globals(g):
    _globals[0] = g


def remember(source):
    """A cell ran: its source may hold the code of a function it defined."""
    _cells.append(source)
    _cells_bytes[0] += len(source)
    while _cells_bytes[0] > _CELLS_MAX_BYTES and len(_cells) > 1:
        _cells_bytes[0] -= len(_cells.pop(0))


def available():
    return _cp is not None


# ---- code, found and compiled again -------------------------------------------------------

def _compiled(source):
    """The code objects of a cell as the runner compiled it (runner.run): the module without its
    trailing expression, and that expression on its own."""
    tree = compile(source, _FILENAME, "exec", ast.PyCF_ONLY_AST)
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    out = [compile(tree, _FILENAME, "exec")]
    if tail is not None:
        out.append(compile(tail, _FILENAME, "eval"))
    return out


def _walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _walk(c)


def _same(a, qualname, firstlineno, bytecode):
    return (a.co_qualname == qualname and a.co_firstlineno == firstlineno and
            a.co_code == bytecode)


def _in_source(source, qualname, firstlineno, bytecode, cache):
    codes = cache.get(source)
    if codes is None:
        try:
            codes = _compiled(source)
        except BaseException:
            codes = []
        cache[source] = codes
    for top in codes:
        for c in _walk(top):
            if _same(c, qualname, firstlineno, bytecode):
                return c
    return None


def _source_of(code, cache):
    """The newest remembered cell whose compilation holds this code object, or None."""
    if code.co_filename != _FILENAME:
        return None
    word = "lambda" if code.co_name == "<lambda>" else code.co_name
    for source in reversed(_cells):
        if (word.startswith("<") or word in source) and \
                _in_source(source, code.co_qualname, code.co_firstlineno, code.co_code, cache):
            return source
    return None


def _sp_code(source, qualname, firstlineno, bytecode):
    """A code object compiled again from its cell's source (never made from bytes)."""
    c = _in_source(source, qualname, firstlineno, bytecode, _restore_cache)
    if c is None:
        raise pickle.UnpicklingError("the code of %s is not in its cell's source any more "
                                     "(another Python version?)" % qualname)
    return c


_restore_cache = {}


# ---- functions ----------------------------------------------------------------------------

_EMPTY = "<empty cell>"  # a closure cell not yet bound when saved (never a value: tagged)


def _sp_function(code, n_cells):
    """A function of the session's: its globals are the session's own, always."""
    cells = tuple(types.CellType() for _ in range(n_cells)) if n_cells else None
    return types.FunctionType(code, _globals[0], code.co_name, None, cells)


def _sp_function_setstate(f, state):
    attrs, slots = state
    if attrs:
        f.__dict__.update(attrs)
    for cell, (bound, value) in zip(f.__closure__ or (), slots.pop("closure")):
        if bound:
            cell.cell_contents = value
    for name, value in slots.items():
        setattr(f, name, value)
    return f


def _function_reduce(f):
    closure = []
    for cell in f.__closure__ or ():
        try:
            closure.append((True, cell.cell_contents))
        except ValueError:
            closure.append((False, None))
    slots = {"__defaults__": f.__defaults__, "__kwdefaults__": f.__kwdefaults__,
             "__annotations__": f.__annotations__, "__doc__": f.__doc__,
             "__name__": f.__name__, "__qualname__": f.__qualname__, "__module__": f.__module__,
             "closure": closure}
    return (_sp_function, (f.__code__, len(f.__code__.co_freevars)),
            (f.__dict__ or None, slots), None, None, _sp_function_setstate)


# ---- classes ------------------------------------------------------------------------------

def _sp_class(metaclass, name, bases, type_kwargs, tracker, extra):
    return _cp._make_skeleton_class(metaclass or type, name, bases, type_kwargs, tracker, extra)


def _sp_enum(bases, name, qualname, members, module, tracker, extra):
    return _cp._make_skeleton_enum(bases, name, qualname, members, module, tracker, extra)


def _sp_class_setstate(cls, state):
    _cpf._class_setstate(cls, state)
    return cls


def _sp_dataclass(cls, params, factories):
    """A dataclass made again from its parameters: dataclass() writes its methods anew."""
    if getattr(cls, "__dataclass_fields__", None) is None:
        for name, factory in factories:
            setattr(cls, name, dataclasses.field(default_factory=factory))
        dataclasses.dataclass(cls, **params)
    return cls


def _sp_namedtuple(name, fields, defaults, module):
    import collections
    return collections.namedtuple(name, fields, defaults=defaults, module=module)


def _sp_enum_member(cls, name):
    """A member of a session's enum (pickle's own way, getattr, is not one a restore may name)."""
    if not (isinstance(cls, type) and issubclass(cls, _cpf.Enum)):
        raise pickle.UnpicklingError("not an enum")
    return cls[name]


def _sp_staticmethod(f):
    return staticmethod(f)


def _sp_classmethod(f):
    return classmethod(f)


def _sp_property(fget, fset, fdel, doc):
    return property(fget, fset, fdel, doc)


# what dataclass() writes into a class, made again rather than saved
_DATACLASS_MADE = ("__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__",
                   "__hash__", "__setattr__", "__delattr__", "__dataclass_fields__",
                   "__dataclass_params__", "__match_args__", "__getstate__", "__setstate__")


# what EnumMeta writes into an enum, made again rather than saved
_ENUM_MADE = ("_new_member_", "_use_args_", "_member_names_", "_member_map_",
              "_value2member_map_", "_unhashable_values_", "_member_type_", "_value_repr_",
              "__new__")


def _class_reduce(cls):
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_field_defaults"):
        defaults = tuple(cls._field_defaults[f] for f in cls._fields if f in cls._field_defaults)
        return (_sp_namedtuple, (cls.__name__, cls._fields, defaults or None, cls.__module__))
    if _cpf.Enum is not None and issubclass(cls, _cpf.Enum):
        clsdict, slots = _cpf._enum_getstate(cls)
        for name in _ENUM_MADE:  # the enum machinery sets these as it makes the class again
            clsdict.pop(name, None)
        return (_sp_enum, _cpf._enum_getnewargs(cls), (clsdict, slots), None, None,
                _sp_class_setstate)
    args = list(_cpf._class_getnewargs(cls))
    if args[0] is type:
        args[0] = None  # the unpickler need not name builtins.type for the common case
    clsdict, slots = _cpf._class_getstate(cls)
    params = cls.__dict__.get("__dataclass_params__")
    if params is not None:
        fields = cls.__dict__.get("__dataclass_fields__", {})
        factories = [(n, f.default_factory) for n, f in fields.items()
                     if f.default_factory is not dataclasses.MISSING]
        for name in _DATACLASS_MADE:
            clsdict.pop(name, None)
        kw = {k: getattr(params, k) for k in ("init", "repr", "eq", "order", "unsafe_hash",
                                               "frozen")}
        return (_sp_class, tuple(args), ((clsdict, slots), kw, factories), None, None,
                _sp_dataclass_state)
    return (_sp_class, tuple(args), (clsdict, slots), None, None, _sp_class_setstate)


def _sp_dataclass_state(cls, state):
    """A dataclass's state: its own attributes, then dataclass() again with its parameters."""
    (clsdict, slots), kw, factories = state
    _cpf._class_setstate(cls, (clsdict, slots))
    return _sp_dataclass(cls, kw, factories)


# ---- the pickler ----------------------------------------------------------------------------

class Pickler(pickle.Pickler):
    """Pickles the session's own functions and classes by value, the rest as pickle does."""

    def __init__(self, file):
        super().__init__(file, protocol=5)
        self._cache = {}

    def reducer_override(self, obj):
        if isinstance(obj, type):
            if obj.__module__ != "__main__" or _cp is None:
                return NotImplemented
            return _class_reduce(obj)
        if isinstance(obj, types.FunctionType):
            if obj.__module__ != "__main__" or obj.__globals__ is not _globals[0] or _cp is None:
                return NotImplemented
            return _function_reduce(obj)
        if isinstance(obj, types.CodeType):
            source = _source_of(obj, self._cache)
            if source is None:
                raise pickle.PicklingError(
                    "the code of %s was not compiled from one of the session's cells (exec() or "
                    "compile() of a string, or a library made it), so it cannot be rebuilt from "
                    "source" % obj.co_qualname)
            return (_sp_code, (source, obj.co_qualname, obj.co_firstlineno, obj.co_code))
        if _cpf is not None and isinstance(obj, _cpf.Enum) and type(obj).__module__ == "__main__":
            return (_sp_enum_member, (type(obj), obj.name))
        if isinstance(obj, staticmethod):
            return (_sp_staticmethod, (obj.__func__,))
        if isinstance(obj, classmethod):
            return (_sp_classmethod, (obj.__func__,))
        if isinstance(obj, property):
            return (_sp_property, (obj.fget, obj.fset, obj.fdel, obj.__doc__))
        return NotImplemented


def dumps(value):
    """value pickled (protocol 5), the session's functions and classes by value."""
    import io
    f = io.BytesIO()
    Pickler(f).dump(value)
    return f.getvalue()


def loaded():
    """A restore is over: the compiled cells it kept go."""
    _restore_cache.clear()


# ---- what cannot be saved, and why ------------------------------------------------------------

def why_not(value, exc):
    """Why value cannot be in a snapshot, in words about the value rather than pickle's."""
    import io as _io
    import socket
    import sqlite3
    import threading
    if isinstance(value, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return ("a %s paused inside its code: its running frame cannot be saved; make it "
                "again after resuming" % type(value).__name__)
    if isinstance(value, (types.FrameType, types.TracebackType)):
        return "an interpreter frame or traceback of this process"
    if isinstance(value, socket.socket):
        return "an open socket: a connection of this process cannot move; open it again"
    if isinstance(value, (_io.IOBase,)):
        return ("an open file or stream (a descriptor of this process); the workspace's files "
                "are saved themselves: open it again")
    if isinstance(value, (sqlite3.Connection, sqlite3.Cursor)):
        return ("an open database connection; the database file in the workspace is saved: "
                "connect again")
    if isinstance(value, threading.Thread) or type(value).__name__ in (
            "lock", "RLock", "_RLock", "Condition", "Semaphore", "Event"):
        return "a thread or a lock: process state, nothing to save"
    if isinstance(value, types.FunctionType) and value.__module__ == "__main__" and _cp is None:
        return ("defined in the session, and this executor cannot save code by value "
                "(python3-cloudpickle is not installed): run the definition again")
    return None
