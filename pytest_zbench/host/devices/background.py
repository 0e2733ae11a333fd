"""One call run on a thread of its own, its outcome (value or exception) collected later by the caller."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """`Background(call)` starts `call()` at once; `outcome()` waits for it and returns its value or raises what
    it raised, in the caller's thread. The thread is a daemon: a session that ends while it runs (Ctrl-C) is not
    held up by it; whatever it started ends by its own deadline."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._call = call
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="zbench-background", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call()
        except BaseException as exc:  # handed to the caller by outcome()
            self._error = exc

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the call to end, at most `timeout_s`; whether it has."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def outcome(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: the call returned
