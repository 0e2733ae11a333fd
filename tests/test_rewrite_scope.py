"""pytest rewrites the asserts of the plugin's modules only: the host's modules import from the bytecode an
install wrote (pytest_zbench/plugin/rewrite_scope.py says why). A pytest session of its own, so that the
plugin is loaded from its entry point as in a user's project."""

from __future__ import annotations

import pytest


def test_the_host_modules_are_not_assertion_rewritten(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def rewritten(name):
            __import__(name)
            return type(sys.modules[name].__loader__).__name__ == "AssertionRewritingHook"

        def test_loaders():
            assert "pytest_zbench.plugin" in sys.modules  # the entry point was loaded
            assert rewritten("pytest_zbench.plugin.options")
            assert not rewritten("pytest_zbench.host.host_session")
            assert not rewritten("pytest_zbench.protocol")
            assert not rewritten("pytest_zbench.stats")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
