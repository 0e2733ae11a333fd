"""The few GL ES entry points the runner calls itself, resolved through eglGetProcAddress with ctypes.

Skia brings its own GL interface for drawing; this module is only for what Skia does not do for us: strings
and limits for the probe, glGetError after each frame, glFinish / 1-pixel glReadPixels for the fallback time
sources, and the EXT_disjoint_timer_query entry points. PyOpenGL is deliberately not used: its extension
wrappers fail to resolve on a surfaceless EGL context.

Mesa's eglGetProcAddress returns a dispatch stub for *any* name, so whether an extension function may be
called is decided from the extension string, never from a non-NULL address.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_zbench.protocol import ZbenchError

GL_NO_ERROR = 0
GL_ERRORS = {
    0x0500: "GL_INVALID_ENUM",
    0x0501: "GL_INVALID_VALUE",
    0x0502: "GL_INVALID_OPERATION",
    0x0503: "GL_STACK_OVERFLOW",
    0x0504: "GL_STACK_UNDERFLOW",
    0x0505: "GL_OUT_OF_MEMORY",
    0x0506: "GL_INVALID_FRAMEBUFFER_OPERATION",
    0x0507: "GL_CONTEXT_LOST",
}
GL_UNSIGNED_BYTE = 0x1401
GL_RGBA = 0x1908
GL_MAX_TEXTURE_SIZE = 0x0D33
GL_VENDOR = 0x1F00
GL_RENDERER = 0x1F01
GL_VERSION = 0x1F02
GL_EXTENSIONS = 0x1F03
GL_SHADING_LANGUAGE_VERSION = 0x8B8C
GL_FRAMEBUFFER = 0x8D40
GL_FRAMEBUFFER_BINDING = 0x8CA6
# EXT_disjoint_timer_query (same values as ARB_timer_query / GL 3.3 core where the names overlap)
GL_QUERY_COUNTER_BITS_EXT = 0x8864
GL_CURRENT_QUERY_EXT = 0x8865
GL_QUERY_RESULT_EXT = 0x8866
GL_QUERY_RESULT_AVAILABLE_EXT = 0x8867
GL_TIME_ELAPSED_EXT = 0x88BF
GL_TIMESTAMP_EXT = 0x8E28
GL_GPU_DISJOINT_EXT = 0x8FBB

_u32, _i32, _vp = ctypes.c_uint32, ctypes.c_int32, ctypes.c_void_p
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "glGetString": (ctypes.c_char_p, _u32),
    "glGetIntegerv": (None, _u32, ctypes.POINTER(_i32)),
    "glGetError": (_u32,),
    "glFinish": (None,),
    "glFlush": (None,),
    "glReadPixels": (None, _i32, _i32, _i32, _i32, _u32, _u32, _vp),
    "glBindFramebuffer": (None, _u32, _u32),
    # timer queries: the names are looked up with the suffix the extension in use gives them
    "glGenQueries": (None, _i32, ctypes.POINTER(_u32)),
    "glDeleteQueries": (None, _i32, ctypes.POINTER(_u32)),
    "glBeginQuery": (None, _u32, _u32),
    "glEndQuery": (None, _u32),
    "glQueryCounter": (None, _u32, _u32),
    "glGetQueryiv": (None, _u32, _u32, ctypes.POINTER(_i32)),
    "glGetQueryObjectiv": (None, _u32, _u32, ctypes.POINTER(_i32)),
    "glGetQueryObjectui64v": (None, _u32, _u32, ctypes.POINTER(ctypes.c_uint64)),
}
_QUERY_FUNCTIONS = ("glGenQueries", "glDeleteQueries", "glBeginQuery", "glEndQuery", "glQueryCounter",
                    "glGetQueryiv", "glGetQueryObjectiv", "glGetQueryObjectui64v")


class GLUnavailable(ZbenchError, RuntimeError):
    """A GL entry point the runner needs could not be resolved."""


class GL:
    """Callable GL entry points bound to the current context, plus the facts the probe reports."""

    if TYPE_CHECKING:  # the gl* entry points are attributes set at run time from _SIGNATURES
        def __getattr__(self, name: str) -> Callable[..., Any]: ...

    def __init__(self, get_proc_address: Callable[[str], int | None]) -> None:
        self._gpa = get_proc_address
        for name in ("glGetString", "glGetIntegerv", "glGetError", "glFinish", "glFlush", "glReadPixels",
                     "glBindFramebuffer"):
            setattr(self, name, self._resolve(name, name))
        self.extensions: frozenset[str] = frozenset(self.get_string(GL_EXTENSIONS).split())
        # Which timer-query flavour this context offers: EXT_disjoint_timer_query on GL ES (with the disjoint
        # flag), ARB_timer_query on desktop GL (without it). None: no GPU timer at all.
        self.timer_extension: str | None = None
        if "GL_EXT_disjoint_timer_query" in self.extensions:
            self.timer_extension, suffix = "GL_EXT_disjoint_timer_query", "EXT"
        elif "GL_ARB_timer_query" in self.extensions:
            self.timer_extension, suffix = "GL_ARB_timer_query", ""
        if self.timer_extension is not None:
            for name in _QUERY_FUNCTIONS:
                setattr(self, name, self._resolve(name, name + suffix))

    def _resolve(self, name: str, symbol: str) -> Callable[..., Any]:
        address = self._gpa(symbol)
        if not address:
            raise GLUnavailable(f"eglGetProcAddress({symbol!r}) returned NULL")
        restype, *argtypes = _SIGNATURES[name]
        return ctypes.CFUNCTYPE(restype, *argtypes)(address)

    # ---------------------------------------------------------------------------------- conveniences

    def get_string(self, name: int) -> str:
        value = self.glGetString(name)
        return value.decode("utf-8", "replace") if value else ""

    def get_integer(self, name: int) -> int:
        out = _i32(0)
        self.glGetIntegerv(name, ctypes.byref(out))
        return out.value

    def drain_errors(self, limit: int = 16) -> list[int]:
        """Every pending glGetError code (GL keeps one flag per kind; `limit` guards a lost context)."""
        codes = []
        for _ in range(limit):
            code = self.glGetError()
            if code == GL_NO_ERROR:
                break
            codes.append(code)
        return codes

    def read_pixel(self, framebuffer: int | None = None) -> bytes:
        """Read one pixel of `framebuffer` (default: the bound one): the driver must finish every command that
        writes it first. The previous binding is restored, so Skia's cached GL state stays true."""
        buf = (ctypes.c_uint8 * 4)()
        previous = self.get_integer(GL_FRAMEBUFFER_BINDING) if framebuffer is not None else None
        if framebuffer is not None and framebuffer != previous:
            self.glBindFramebuffer(GL_FRAMEBUFFER, framebuffer)
        self.glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, ctypes.cast(buf, _vp))
        if previous is not None and framebuffer != previous:
            self.glBindFramebuffer(GL_FRAMEBUFFER, previous)
        return bytes(buf)

    def counter_bits(self, target: int = GL_TIME_ELAPSED_EXT) -> int:
        """GL_QUERY_COUNTER_BITS_EXT for a query target (0: the counter carries no information)."""
        if self.timer_extension is None:
            return 0
        out = _i32(0)
        self.glGetQueryiv(target, GL_QUERY_COUNTER_BITS_EXT, ctypes.byref(out))
        return out.value


def error_name(code: int) -> str:
    return GL_ERRORS.get(code, f"0x{code:04X}")
