"""The host side of a session, one folder per role (docs/architecture.md, "The layers"): devices/ (a device's
facts and control), measure/ (a scene's launches), verdicts/ (every verdict), report/ (every rendering of a
run); host_session.py orchestrates them and run_record.py assembles and writes run.json."""
