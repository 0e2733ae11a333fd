"""Shared by the broken runners: tests/thirdparty/rect_runner.py (a runner that passes the kit), importable,
so that each broken runner replaces one of its parts and breaks exactly one rule."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "thirdparty"))

import rect_runner


def main():
    sys.exit(rect_runner.main())
