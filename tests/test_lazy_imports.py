"""What the host imports before its first launch: the plugin and the host session load none of the heavy
libraries that only some sessions use (README, "Performance": scipy.optimize and scipy.stats at import were
about a second of the first test's setup). Each is imported in the function that needs it.

A fresh interpreter, so that nothing another test imported counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Used by some sessions only: the statistics of a judged scene or a sequential gate (scipy), the published site
# (plotly), golden images (PIL), run.json's schema check at the session's end (jsonschema), the remote
# transports (asyncssh, adbutils), a PostgreSQL history (psycopg), the reference runner (skia).
LAZY = ("scipy", "plotly", "PIL", "jsonschema", "asyncssh", "adbutils", "psycopg", "skia")


def test_the_host_session_imports_no_library_it_may_not_use() -> None:
    code = ("import json, sys\nimport pytest_zbench.plugin, pytest_zbench.host.host_session\n"
            "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "pytest_zbench" in loaded and "numpy" in loaded  # the check sees what was imported
    assert not loaded & set(LAZY), f"imported at the host session's import: {sorted(loaded & set(LAZY))}"
