# executor-node/python/ipython.py — a small IPython.display, importable in every profile (module
# IPython.display; IPython and IPython.core.display name it too).
#
# Notebook-style code writes `from IPython.display import display, HTML, Markdown`; without
# IPython that import failed before the code computed anything. This is not IPython: it is the
# part of IPython.display that maps onto the sandbox's rich outputs (rich.py). Each object
# offers IPython's _repr_*_ methods, which rich.py renders as it renders any object of that
# protocol; display() is rich.py's. get_ipython() is None, as in a plain `python`. Loaded by
# the zygote before its warm imports, which find it in sys.modules (the profiles list IPython,
# common/profiles.c); compiled into snakepit-zygote with runner.py.
import json
import sys
import types

import _snakepit_rich as _rich

__all__ = ["display", "DisplayObject", "HTML", "Markdown", "Latex", "Math", "SVG", "JSON",
           "Image", "Pretty", "clear_output", "get_ipython"]

_PNG = b"\x89PNG\r\n\x1a\n"

display = _rich.display


def clear_output(wait=False):
    """There is no output area to clear: outputs are returned with the call."""


def get_ipython():
    """None: the code is not running inside IPython (as in a plain `python`)."""
    return None


class DisplayObject:
    """What IPython's display classes share: data given directly, or read from filename."""

    _binary = False

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if isinstance(data, str) and url is None and data.startswith(("http://", "https://")):
            url, data = data, None  # as IPython reads it (the sandbox cannot fetch it)
        if filename is not None and data is None:
            with open(filename, "rb" if self._binary else "r") as f:
                data = f.read()
        self.data = data
        self.url = url
        self.filename = filename
        self.metadata = metadata

    def __repr__(self):
        return "<IPython.core.display.%s object>" % type(self).__name__


class HTML(DisplayObject):
    def _repr_html_(self):
        return self.data if self.data is not None else '<a href="%s">%s</a>' % (self.url, self.url)


class Markdown(DisplayObject):
    def _repr_markdown_(self):
        return self.data


class Latex(DisplayObject):
    def _repr_latex_(self):
        return self.data


class Math(DisplayObject):
    def _repr_latex_(self):
        text = (self.data or "").strip()
        return text if text.startswith("$") else "$$%s$$" % text


class SVG(DisplayObject):
    def _repr_svg_(self):
        data = self.data
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


class Pretty(DisplayObject):
    def __repr__(self):
        return str(self.data)


class JSON(DisplayObject):
    """JSON(data): a dict or list, or its JSON text."""

    def __init__(self, data=None, url=None, filename=None, expanded=False, metadata=None,
                 root="root", **kwargs):
        super().__init__(data, url, filename, metadata)
        if isinstance(self.data, (str, bytes)):
            self.data = json.loads(self.data)
        self.expanded, self.root = expanded, root

    def _repr_json_(self):
        return self.data


class Image(DisplayObject):
    """Image(data or filename): a PNG is shown as image/png; another format as a PNG when
    Pillow is loaded (python.data_science), else as its text (the sandbox returns PNGs only)."""

    _binary = True

    def __init__(self, data=None, url=None, filename=None, format=None, embed=None, width=None,
                 height=None, retina=False, unconfined=False, metadata=None, alt=None):
        if isinstance(data, str) and filename is None and url is None:
            if data.startswith(("http://", "https://")):
                url, data = data, None
            else:
                filename, data = data, None
        super().__init__(data, url, filename, metadata)
        self.format, self.width, self.height, self.alt = format, width, height, alt

    def _repr_png_(self):
        data = self.data
        if not isinstance(data, (bytes, bytearray)):
            return None
        if bytes(data[:8]) == _PNG:
            return bytes(data)
        pil = sys.modules.get("PIL.Image")
        if pil is None:
            return None
        import io
        try:
            out = io.BytesIO()
            pil.open(io.BytesIO(bytes(data))).save(out, format="PNG")
            return out.getvalue()
        except Exception:
            return None

    def __repr__(self):
        if self._repr_png_() is None and self.data is not None:
            return "<IPython.core.display.Image object: %d bytes the sandbox cannot show as a PNG>" \
                % len(self.data)
        return super().__repr__()


def _install():
    """IPython and IPython.core as the packages that hold this module, in sys.modules."""
    this = sys.modules[__name__]
    package = types.ModuleType("IPython", "The sandbox's IPython: IPython.display only.")
    package.__path__ = []  # a package, whose only submodules are these
    package.display = this
    package.get_ipython = get_ipython
    package.version_info = (0, 0, 0, "sandbox")
    package.__version__ = "0.0.0+sandbox"
    core = types.ModuleType("IPython.core")
    core.__path__ = []
    core.display = this
    package.core = core
    sys.modules.update({"IPython": package, "IPython.core": core, "IPython.core.display": this})


_install()
