"""pytest rewrites the asserts of the plugin's own modules only, not of the whole package.

pytest marks every top-level package of a distribution with a `pytest11` entry point for assertion rewriting,
so each host module a session imports (about 110: the host, its statistics, protocol, transports) was parsed,
rewritten and compiled again at import instead of loaded from the bytecode pip wrote, whenever pytest cannot
cache its rewritten copy (PYTHONDONTWRITEBYTECODE, as CI images often set; a read-only site-packages): 0.4-0.6 s
of the first test's setup on a 2-core host, every session. The asserts of those modules are invariants for the
type checker, not test assertions, so nothing is lost when they import as plain Python does it; the plugin's
modules (pytest imports the entry point's package for rewriting itself) keep pytest's messages.

This reaches into pytest's rewriting hook (`_must_rewrite`, `_marked_for_rewrite_cache`), which pytest has
no public API for; when those change, nothing here applies and the package is rewritten as before.
(docs/architecture.md, "A scene's way through a session"; README, "Benchmarks".)
"""

from __future__ import annotations

import sys

PACKAGE = __name__.split(".")[0]
PLUGIN = __name__.rpartition(".")[0]


def rewrite_only_the_plugin() -> bool:
    """Narrow pytest's mark from the whole package to the plugin's package; True when one was narrowed."""
    narrowed = False
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if isinstance(marked, set) and isinstance(cache, dict) and PACKAGE in marked:
            marked.discard(PACKAGE)
            marked.add(PLUGIN)
            cache.clear()
            narrowed = True
    return narrowed


rewrite_only_the_plugin()
