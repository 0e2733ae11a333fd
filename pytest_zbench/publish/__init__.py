"""`zbench publish`: a static, offline site of a history (docs/report.md, "Published site").

`build.py` reads the history and writes the site, `series.py` turns a scene's runs into what its page shows,
`verdicts.py` reads the gate's verdicts back from run.json files, `site.py` writes the pages, `command.py` is
the subcommand."""
