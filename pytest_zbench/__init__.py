"""pytest-zbench: rendering scenes as perf and golden-image tests on real devices."""


def _version() -> str:
    # The build writes _version.py from the git tag (pyproject.toml, [tool.setuptools_scm]); a copy of the
    # sources that was never built or installed (the emulated device's runner copy) has no version to claim.
    try:
        from ._version import __version__ as built
    except ImportError:
        return "0+unknown"
    return str(built)


__version__ = _version()
