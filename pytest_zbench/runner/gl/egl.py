"""A headless EGL + OpenGL ES 2 context through ctypes (libEGL.so.1).

The recipe (verified on Mesa llvmpipe): `EGL_PLATFORM=surfaceless`, `eglGetDisplay(EGL_DEFAULT_DISPLAY)`,
`eglInitialize`, a config with `EGL_PBUFFER_BIT` and `EGL_OPENGL_ES2_BIT`, `eglBindAPI(EGL_OPENGL_ES_API)`, a
context with `EGL_CONTEXT_CLIENT_VERSION 2`, made current on a 1x1 pbuffer (or on no surface at all where
`EGL_KHR_surfaceless_context` allows). Skia draws into its own framebuffer objects, so the pbuffer is never
drawn to.

Every failure raises `EGLUnavailable` naming the step that failed and the EGL error code, so that a probe can
say *why* there is no GPU backend instead of crashing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

from pytest_zbench.protocol import ZbenchError

EGL_SUCCESS = 0x3000
EGL_ERRORS = {
    0x3000: "EGL_SUCCESS",
    0x3001: "EGL_NOT_INITIALIZED",
    0x3002: "EGL_BAD_ACCESS",
    0x3003: "EGL_BAD_ALLOC",
    0x3004: "EGL_BAD_ATTRIBUTE",
    0x3005: "EGL_BAD_CONFIG",
    0x3006: "EGL_BAD_CONTEXT",
    0x3007: "EGL_BAD_CURRENT_SURFACE",
    0x3008: "EGL_BAD_DISPLAY",
    0x3009: "EGL_BAD_MATCH",
    0x300A: "EGL_BAD_NATIVE_PIXMAP",
    0x300B: "EGL_BAD_NATIVE_WINDOW",
    0x300C: "EGL_BAD_PARAMETER",
    0x300D: "EGL_BAD_SURFACE",
    0x300E: "EGL_CONTEXT_LOST",
}
EGL_ALPHA_SIZE = 0x3021
EGL_BLUE_SIZE = 0x3022
EGL_GREEN_SIZE = 0x3023
EGL_RED_SIZE = 0x3024
EGL_STENCIL_SIZE = 0x3026
EGL_SURFACE_TYPE = 0x3033
EGL_NONE = 0x3038
EGL_RENDERABLE_TYPE = 0x3040
EGL_VENDOR = 0x3053
EGL_VERSION = 0x3054
EGL_EXTENSIONS = 0x3055
EGL_HEIGHT = 0x3056
EGL_WIDTH = 0x3057
EGL_CLIENT_APIS = 0x308D
EGL_CONTEXT_CLIENT_VERSION = 0x3098
EGL_OPENGL_ES_API = 0x30A0
EGL_SYNC_FENCE_KHR = 0x30F9
EGL_SYNC_FLUSH_COMMANDS_BIT_KHR = 0x0001
EGL_TIMEOUT_EXPIRED_KHR = 0x30F5
EGL_CONDITION_SATISFIED_KHR = 0x30F6
EGL_PBUFFER_BIT = 0x0001
EGL_OPENGL_ES2_BIT = 0x0004

LIBRARY_NAMES = ("libEGL.so.1", "libEGL.so")


class EGLUnavailable(ZbenchError, RuntimeError):
    """No usable EGL/GLES2 context; the message names the step that failed and what to do."""


LIBRARY_ENV = "ZBENCH_EGL_LIBRARY"  # load this EGL library instead of the system's (a vendor's, or none)


def _load_library() -> ctypes.CDLL:
    errors = []
    if os.environ.get(LIBRARY_ENV):
        names = [os.environ[LIBRARY_ENV]]
    else:
        names = list(LIBRARY_NAMES)
        found = ctypes.util.find_library("EGL")
        if found and found not in names:
            names.append(found)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(f"{name}: {exc}")
    raise EGLUnavailable(
        "no EGL library could be loaded (" + "; ".join(errors) + "); install libegl1 and a driver "
        "(on Debian: libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri)"
    )


def _declare(lib: ctypes.CDLL) -> None:
    vp, i32, u32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32
    sig = {
        "eglGetDisplay": (vp, [vp]),
        "eglInitialize": (u32, [vp, ctypes.POINTER(i32), ctypes.POINTER(i32)]),
        "eglTerminate": (u32, [vp]),
        "eglQueryString": (ctypes.c_char_p, [vp, i32]),
        "eglChooseConfig": (u32, [vp, ctypes.POINTER(i32), ctypes.POINTER(vp), i32, ctypes.POINTER(i32)]),
        "eglBindAPI": (u32, [u32]),
        "eglCreatePbufferSurface": (vp, [vp, vp, ctypes.POINTER(i32)]),
        "eglCreateContext": (vp, [vp, vp, vp, ctypes.POINTER(i32)]),
        "eglMakeCurrent": (u32, [vp, vp, vp, vp]),
        "eglDestroyContext": (u32, [vp, vp]),
        "eglDestroySurface": (u32, [vp, vp]),
        "eglGetError": (i32, []),
        "eglGetProcAddress": (vp, [ctypes.c_char_p]),
        "eglReleaseThread": (u32, []),
    }
    for name, (restype, argtypes) in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as exc:
            raise EGLUnavailable(f"the EGL library lacks {name}") from exc
        fn.restype, fn.argtypes = restype, argtypes


def _attribs(*pairs: int) -> Any:
    values = list(pairs) + [EGL_NONE]
    return (ctypes.c_int32 * len(values))(*values)


class EGLContext:
    """One headless GLES2 context, current on the calling thread from construction until `close()`."""

    def __init__(self, *, platform: str = "surfaceless") -> None:
        # Mesa reads EGL_PLATFORM when the display is opened; headless means no X11/Wayland, ever.
        os.environ["EGL_PLATFORM"] = platform
        self.lib = _load_library()
        _declare(self.lib)
        self.display: int | None = None
        self.surface: int | None = None
        self.context: int | None = None
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------------------------------ setup

    def _fail(self, step: str, hint: str = "") -> EGLUnavailable:
        code = self.lib.eglGetError()
        name = EGL_ERRORS.get(code, hex(code))
        return EGLUnavailable(f"{step} failed ({name}, EGL_PLATFORM={os.environ.get('EGL_PLATFORM')})"
                              + (f": {hint}" if hint else ""))

    def _open(self) -> None:
        lib = self.lib
        display = lib.eglGetDisplay(None)  # EGL_DEFAULT_DISPLAY
        if not display:
            raise self._fail("eglGetDisplay(EGL_DEFAULT_DISPLAY)", "no EGL display for this platform")
        major, minor = ctypes.c_int32(), ctypes.c_int32()
        if not lib.eglInitialize(display, ctypes.byref(major), ctypes.byref(minor)):
            raise self._fail("eglInitialize", "no EGL driver could open a display (is libegl-mesa0 installed?)")
        self.display = display
        self.egl_version = f"{major.value}.{minor.value}"
        self.egl_vendor = self._query(EGL_VENDOR)
        self.egl_extensions = self._query(EGL_EXTENSIONS).split()

        config = ctypes.c_void_p()
        count = ctypes.c_int32()
        attribs = _attribs(EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT,
                           EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_ALPHA_SIZE, 8,
                           EGL_STENCIL_SIZE, 8)
        if not lib.eglChooseConfig(display, attribs, ctypes.byref(config), 1, ctypes.byref(count)):
            raise self._fail("eglChooseConfig")
        if count.value < 1 or not config.value:
            raise EGLUnavailable("eglChooseConfig found no config with EGL_PBUFFER_BIT, EGL_OPENGL_ES2_BIT and "
                                 "RGBA8888 + stencil 8: this EGL driver cannot render GLES2 off-screen")
        if not lib.eglBindAPI(EGL_OPENGL_ES_API):
            raise self._fail("eglBindAPI(EGL_OPENGL_ES_API)", "the driver has no OpenGL ES")

        surface = lib.eglCreatePbufferSurface(display, config, _attribs(EGL_WIDTH, 1, EGL_HEIGHT, 1))
        if not surface:
            if "EGL_KHR_surfaceless_context" not in self.egl_extensions:
                raise self._fail("eglCreatePbufferSurface(1x1)", "and EGL_KHR_surfaceless_context is absent")
            lib.eglGetError()  # clear, then go on without a surface
            surface = None
        self.surface = surface

        context = lib.eglCreateContext(display, config, None, _attribs(EGL_CONTEXT_CLIENT_VERSION, 2))
        if not context:
            raise self._fail("eglCreateContext(EGL_CONTEXT_CLIENT_VERSION=2)")
        self.context = context
        if not lib.eglMakeCurrent(display, surface, surface, context):
            raise self._fail("eglMakeCurrent")
        self._init_fences()

    def _init_fences(self) -> None:
        """EGL_KHR_fence_sync, used to bound the frames in flight the way a swap chain would."""
        self._create_sync = self._wait_sync = self._destroy_sync = None
        if "EGL_KHR_fence_sync" not in self.egl_extensions:
            return
        vp, i32, u32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32
        protos = {
            "eglCreateSyncKHR": ctypes.CFUNCTYPE(vp, vp, u32, ctypes.POINTER(i32)),
            "eglClientWaitSyncKHR": ctypes.CFUNCTYPE(i32, vp, vp, i32, ctypes.c_uint64),
            "eglDestroySyncKHR": ctypes.CFUNCTYPE(u32, vp, vp),
        }
        fns = {}
        for name, proto in protos.items():
            address = self.get_proc_address(name)
            if not address:
                return
            fns[name] = proto(address)
        self._create_sync = fns["eglCreateSyncKHR"]
        self._wait_sync = fns["eglClientWaitSyncKHR"]
        self._destroy_sync = fns["eglDestroySyncKHR"]

    @property
    def has_fences(self) -> bool:
        return self._create_sync is not None

    def fence(self) -> int | None:
        """A fence after every command issued so far, or None where fences are not available."""
        if self._create_sync is None:
            return None
        return self._create_sync(self.display, EGL_SYNC_FENCE_KHR, None) or None

    def wait_fence(self, sync: int, timeout_ns: int = 5_000_000_000) -> bool:
        """Block until the fence signals (flushing first); False on timeout or error. The fence is destroyed."""
        assert self._wait_sync is not None and self._destroy_sync is not None
        status = self._wait_sync(self.display, sync, EGL_SYNC_FLUSH_COMMANDS_BIT_KHR, timeout_ns)
        self._destroy_sync(self.display, sync)
        return status == EGL_CONDITION_SATISFIED_KHR

    def _query(self, name: int) -> str:
        value = self.lib.eglQueryString(self.display, name)
        return value.decode("utf-8", "replace") if value else ""

    # ------------------------------------------------------------------------------------------- use

    def get_proc_address(self, name: str) -> int | None:
        """The address of a GL or EGL entry point, or None where the driver does not have it."""
        return self.lib.eglGetProcAddress(name.encode("ascii")) or None

    def info(self) -> dict[str, Any]:
        return {"egl_version": self.egl_version, "egl_vendor": self.egl_vendor,
                "egl_platform": os.environ.get("EGL_PLATFORM", "")}

    def close(self) -> None:
        lib = self.lib
        if self.display:
            lib.eglMakeCurrent(self.display, None, None, None)
            if self.context:
                lib.eglDestroyContext(self.display, self.context)
            if self.surface:
                lib.eglDestroySurface(self.display, self.surface)
            lib.eglTerminate(self.display)
            lib.eglReleaseThread()
        self.display = self.surface = self.context = None

    def __enter__(self) -> EGLContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
