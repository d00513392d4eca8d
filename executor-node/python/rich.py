# executor-node/python/rich.py — rich outputs (module _snakepit_rich): display() and the trailing
# expression, rendered by type the way a notebook would.
#
# A DataFrame comes back as text/plain, text/html and application/json (the first rows only), a
# matplotlib figure as image/png (image/svg+xml when the call asks for SVG), a PIL image as
# image/png, an object with IPython's _repr_*_ methods as what they give, anything JSON-able as
# application/json, and everything as text/plain; IPython.display's objects (ipython.py) are
# objects of that protocol. Each output is a list of (mime, bytes); the
# runner hands them to _snakepit.finish, the zygote checks them again (outcome_meta.c) and the
# front-end turns them into structuredContent.outputs and MCP content blocks. Compiled into
# snakepit-zygote with runner.py.
import base64
import io
import json
import sys

_MAX_OUTPUTS = 16        # display() calls and the trailing expression, per job
_MAX_ENTRY = 1 << 20     # bytes of one representation
_MAX_TOTAL = 3 << 20     # bytes of every representation together (the meta area holds 8 MiB)
_TABLE_ROWS = 50         # rows and columns a table's HTML and JSON carry
_TABLE_COLS = 50
_REPR_CAP = 64 * 1024

# [(kind, index, mime, bytes)] of this job, and whether something was left out
outputs = []
truncated = [False]
_figure_format = ["png"]


def reset(figure_format):
    del outputs[:]
    truncated[0] = False
    _figure_format[0] = figure_format


def _text(s):
    return s.encode("utf-8", "backslashreplace")


def _plain(obj):
    try:
        text = repr(obj)
    except BaseException as e:  # a hostile __repr__ must not lose the job's result
        text = "<repr failed: %s>" % type(e).__name__
    if len(text) > _REPR_CAP:
        text = text[:_REPR_CAP] + "... [%d more characters]" % (len(text) - _REPR_CAP)
    return [("text/plain", _text(text))]


def _figure(fig, fmt):
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    svg = fmt == "svg"
    fig.savefig(buf, format="svg" if svg else "png")
    try:
        plt.close(fig)  # shown here: not again among the figures left open at the end
    except BaseException:
        pass
    return [("image/svg+xml" if svg else "image/png", buf.getvalue())]


def _pil(img):
    buf = io.BytesIO()
    if img.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        img = img.convert("RGBA")
    img.save(buf, format="PNG")
    return [("image/png", buf.getvalue())]


def _table(df, pd):
    frame = df.to_frame() if isinstance(df, pd.Series) else df
    head = frame.iloc[:_TABLE_ROWS, :_TABLE_COLS]
    split = json.loads(head.to_json(orient="split", date_format="iso", default_handler=str))
    table = {"columns": split.get("columns", []), "index": split.get("index", []),
             "data": split.get("data", []), "shape": list(frame.shape),
             "truncated": frame.shape[0] > _TABLE_ROWS or frame.shape[1] > _TABLE_COLS}
    html = frame.to_html(max_rows=_TABLE_ROWS, max_cols=_TABLE_COLS)
    return [("text/html", _text(html)), ("application/json", _text(json.dumps(table)))]


# IPython's display protocol (what sympy, pandas' Styler and many libraries implement)
_REPR_METHODS = (("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
                 ("_repr_latex_", "text/latex"), ("_repr_svg_", "image/svg+xml"),
                 ("_repr_png_", "image/png"), ("_repr_json_", "application/json"))


def _protocol(obj):
    out = []
    for method, mime in _REPR_METHODS:
        fn = getattr(type(obj), method, None)
        if fn is None:
            continue
        try:
            data = fn(obj)
        except BaseException:
            continue
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        if data is None:
            continue
        if mime == "application/json" and not isinstance(data, (str, bytes)):
            data = json.dumps(data)
        out.append((mime, data if isinstance(data, bytes) else _text(str(data))))
    return out


# What a mime bundle may carry here, richest first (outcome_meta.c keeps the same types).
_BUNDLE_MIMES = ("text/html", "text/markdown", "text/latex", "image/svg+xml", "image/png",
                 "application/json", "text/plain")


def _mimebundle(obj):
    """IPython's _repr_mimebundle_ (and a raw bundle, display(..., raw=True)): {mime: data},
    a PNG as its base64 text as Jupyter carries it."""
    if isinstance(obj, _RawBundle):
        data = obj.data
    else:
        fn = getattr(type(obj), "_repr_mimebundle_", None)
        if fn is None:
            return []
        try:
            data = fn(obj, include=None, exclude=None)
        except TypeError:
            data = fn(obj)
    if isinstance(data, tuple):  # (data, metadata)
        data = data[0]
    if not isinstance(data, dict):
        return []
    out = []
    for mime in _BUNDLE_MIMES:
        value = data.get(mime)
        if value is None:
            continue
        if mime == "image/png" and isinstance(value, str):
            value = base64.b64decode(value)
        elif mime == "application/json" and not isinstance(value, (str, bytes)):
            value = json.dumps(value)
        out.append((mime, value if isinstance(value, bytes) else _text(str(value))))
    return out


class _RawBundle:
    """display(bundle, raw=True): a dict {mime: data} shown as it is."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


def _json(obj):
    if isinstance(obj, (dict, list)) and obj:
        try:
            text = json.dumps(obj, allow_nan=False)
        except (TypeError, ValueError):
            return []
        if len(text) <= _MAX_ENTRY:
            return [("application/json", _text(text))]
    return []


def bundle(obj, fmt=None):
    """The representations of obj, richest first, text/plain last."""
    fmt = fmt or _figure_format[0]
    mods = sys.modules
    figure = getattr(mods.get("matplotlib.figure"), "Figure", None)
    if figure is not None and isinstance(obj, figure):
        return _figure(obj, fmt)
    image = getattr(mods.get("PIL.Image"), "Image", None)
    if image is not None and isinstance(obj, image):
        return _pil(obj) + _plain(obj)
    pd = mods.get("pandas")
    if pd is not None and isinstance(obj, (pd.DataFrame, pd.Series)):
        return _table(obj, pd) + _plain(obj)
    sympy = mods.get("sympy")
    if sympy is not None and isinstance(obj, sympy.Basic):
        return [("text/latex", _text("$%s$" % sympy.latex(obj)))] + _plain(obj)
    bundled = _mimebundle(obj)
    if bundled:
        has_plain = any(mime == "text/plain" for mime, _ in bundled)
        return bundled if has_plain else bundled + _plain(obj)
    rich = _protocol(obj)
    return (rich or _json(obj)) + _plain(obj)


def add(kind, obj, fmt=None):
    """One output of obj, within the caps (past them: dropped, and the job says so)."""
    if len({i for _, i, _, _ in outputs}) >= _MAX_OUTPUTS:
        truncated[0] = True
        return
    try:
        reps = bundle(obj, fmt)
    except MemoryError:
        truncated[0] = True
        return
    except BaseException as e:
        sys.stderr.write("[snakepit: output could not be rendered: %s]\n" % type(e).__name__)
        reps = _plain(obj)
    index = 1 + max((i for _, i, _, _ in outputs), default=-1)
    total = sum(len(d) for _, _, _, d in outputs)
    for mime, data in reps:
        if len(data) > _MAX_ENTRY or total + len(data) > _MAX_TOTAL:
            truncated[0] = True
            continue
        outputs.append((kind, index, mime, data))
        total += len(data)


def display(*objs, format=None, raw=False, include=None, exclude=None, metadata=None,
            transient=None, display_id=None, clear=False, **kwargs):
    """IPython's display(): each object becomes one output, rendered by type; with raw=True
    each is a mime bundle ({mime: data}) shown as it is. format="svg" renders a matplotlib
    figure as SVG. IPython's other arguments are accepted and change nothing (there is no
    notebook to update)."""
    for obj in objs:
        add("display", _RawBundle(obj) if raw and isinstance(obj, dict) else obj, format)
