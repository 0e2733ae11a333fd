"""Engines side by side: `zbench engines RUN ...`, per scene several engines measured on one machine with their
ratios to a reference engine (table.py), engines.html (page.py), the subcommand (command.py). docs/report.md,
"Engines side by side"."""

# The ratio's metric of fixed-load scenes by default; here, in a leaf, so that `zbench --help` imports nothing heavy.
DEFAULT_METRIC = "frame_ms.p50"
