"""Everything a run renders from its facts: report.html and its charts, the terminal table, the Chrome
trace, the Markdown summary of a lab leg, the corpus, counters and sustained sections (docs/architecture.md)."""
