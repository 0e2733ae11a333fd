"""Project-level pytest configuration of the Zinc render suite.

The pytest-zbench plugin (installed as an entry point) collects scenes/*.yaml into perf and golden tests.
This file is where a project adds its own fixtures and implements the plugin's hooks.
"""

collect_ignore = ["bench", "goldens"]
