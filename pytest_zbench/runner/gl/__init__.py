"""Headless OpenGL ES 2 for the reference runner, through ctypes only.

* `egl`      — an EGL display, a pbuffer config and a GLES2 context made current (no window system).
* `glapi`    — the handful of GL entry points the runner calls itself, resolved with eglGetProcAddress.
* `timer`    — GPU time sources (timer_query, finish_bracket, readback, none) and the validation of raw
               timer values.

Nothing here imports PyOpenGL: its extension wrappers do not resolve on a surfaceless EGL context.
"""
