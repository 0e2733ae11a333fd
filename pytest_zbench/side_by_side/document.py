"""engines.html: engines side by side on one self-contained, offline page in report.html's style (its CSS,
host/report/html.py), made of page.py's parts. `zbench engines` writes it, and `zbench publish` writes one per
machine whose runs hold several engines (publish/engines.py)."""

from __future__ import annotations

import html
from pathlib import Path

from ..files import write_bytes_atomic
from ..host.report.html import CSS as REPORT_CSS
from .page import CSS, engines_table, explanation, scenes_table
from .table import SideBySide


def page_html(table: SideBySide, page_folder: Path, *, nav: str = "", title: str = "Engines side by side") -> str:
    """The whole page; links are relative to `page_folder`, where the page goes."""
    return (f"<!doctype html><html lang=en><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<style>{REPORT_CSS}{CSS}</style><body>{nav}<h1>{html.escape(title)}</h1>{explanation(table)}"
            f"<h2>Engines</h2>{engines_table(table, page_folder)}<h2>Scenes</h2>{scenes_table(table)}"
            "</body></html>\n")


def write_page(table: SideBySide, path: Path, *, nav: str = "", title: str = "Engines side by side") -> Path:
    write_bytes_atomic(path, page_html(table, path.parent, nav=nav, title=title).encode("utf-8"), durable=False)
    return path
