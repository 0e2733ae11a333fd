"""The reusable workflow installs, by default, the version it was called at: its step `version` reads the
workflow's own repository and commit from the job's OIDC token and the legs pip-install that requirement. The
step's script is run as written in .github/workflows/zbench-engine.yml; GitHub's token service is the one
boundary played here (a loopback HTTP server answering as it does: {"value": JWT}), and GITHUB_SERVER_URL
points at a folder of git repositories, so pip really installs the named commit."""

from __future__ import annotations

import base64
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "zbench-engine.yml"
TOKEN = "request-token-not-for-logs"


def _step(job: str, step_id: str) -> dict[str, object]:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return next(s for s in jobs[job]["steps"] if s.get("id") == step_id)


def _jwt(claims: dict[str, str]) -> str:
    def part(value: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2lnbmF0dXJl"


@pytest.fixture
def token_service() -> Iterator[dict[str, object]]:
    """A loopback stand-in for the Actions token service: answers a request carrying the bearer token with the
    JWT of `state['claims']`, anything else with 401."""
    state: dict[str, object] = {"claims": {}, "requests": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (the stdlib's name)
            state["requests"] = int(state["requests"]) + 1  # type: ignore[call-overload]
            if self.headers.get("Authorization") != f"bearer {TOKEN}":
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps({"count": 1, "value": _jwt(state["claims"])}).encode()  # type: ignore[arg-type]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/token?api-version=2.0"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _run_step(script: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str]:
    output = tmp_path / "github_output"
    output.write_text("")
    full = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_SERVER_URL": "https://github.com", **env}
    ran = subprocess.run(["bash", "-e", "-c", script], env=full, capture_output=True, text=True, timeout=120)
    return ran, output.read_text()


def test_without_a_token_the_step_says_what_to_grant(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIONS_ID_TOKEN")}
    script = str(_step("plan", "version")["run"])
    output = tmp_path / "out"
    output.write_text("")
    ran = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=60,
                         env={**env, "ZBENCH_PIP": "", "GITHUB_OUTPUT": str(output)})
    assert ran.returncode == 1
    assert "id-token: write" in ran.stdout and output.read_text() == ""


def test_an_input_requirement_is_taken_as_given(tmp_path, token_service):
    ran, written = _run_step(str(_step("plan", "version")["run"]), tmp_path, ZBENCH_PIP="pytest-zbench[all]==0.4.0",
                             ACTIONS_ID_TOKEN_REQUEST_URL=str(token_service["url"]),
                             ACTIONS_ID_TOKEN_REQUEST_TOKEN=TOKEN)
    assert ran.returncode == 0, ran.stderr
    assert written == "pip=pytest-zbench[all]==0.4.0\n" and token_service["requests"] == 0


def test_the_default_names_the_workflows_own_repository_and_commit_and_keeps_the_token_off_the_output(
        tmp_path, token_service):
    token_service["claims"] = {
        "job_workflow_ref": "lab-org/pytest-zbench/.github/workflows/zbench-engine.yml@refs/tags/v0.4.0",
        "job_workflow_sha": "0123456789abcdef0123456789abcdef01234567",
        "workflow_ref": "engine-org/zinc/.github/workflows/bench.yml@refs/heads/main",  # the caller's: not used
    }
    ran, written = _run_step(str(_step("plan", "version")["run"]), tmp_path, ZBENCH_PIP="",
                             ACTIONS_ID_TOKEN_REQUEST_URL=str(token_service["url"]),
                             ACTIONS_ID_TOKEN_REQUEST_TOKEN=TOKEN)
    assert ran.returncode == 0, ran.stderr
    assert written == ("pip=pytest-zbench[all] @ git+https://github.com/lab-org/pytest-zbench"
                       "@0123456789abcdef0123456789abcdef01234567\n")
    assert TOKEN not in ran.stdout + ran.stderr + written


@pytest.mark.acceptance
def test_the_legs_install_step_with_the_defaults_installs_the_commit_the_workflow_was_called_at(
        tmp_path, token_service):
    server = tmp_path / "server"
    called = server / "lab-org" / "pytest-zbench"
    subprocess.run(["git", "clone", "-q", str(REPO), str(called)], check=True)
    subprocess.run(["git", "-C", str(called), "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v9.8.6",
                    "-m", "release"], check=True)
    sha = subprocess.run(["git", "-C", str(called), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    token_service["claims"] = {"job_workflow_ref": "lab-org/pytest-zbench/.github/workflows/zbench-engine.yml@v9.8.6",
                               "job_workflow_sha": sha}
    ran, written = _run_step(str(_step("plan", "version")["run"]), tmp_path, ZBENCH_PIP="",
                             GITHUB_SERVER_URL=f"file://{server}",
                             ACTIONS_ID_TOKEN_REQUEST_URL=str(token_service["url"]),
                             ACTIONS_ID_TOKEN_REQUEST_TOKEN=TOKEN)
    assert ran.returncode == 0, ran.stderr
    requirement = written.removeprefix("pip=").strip()
    # The legs' install step, as written, in a fresh environment with that requirement.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # A current pip, as actions/setup-python gives the legs (the pip of Debian 12's venv, 23.0, rejects a
    # git+file URL, which stands in for github.com here).
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    install = next(s for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["device"]["steps"]
                   if s.get("name") == "Install pytest-zbench")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COVERAGE_PROCESS_START")}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    installed = subprocess.run(["bash", "-e", "-c", str(install["run"])], env={**env, "ZBENCH_PIP": requirement},
                               capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    said = subprocess.run([str(venv / "bin" / "zbench"), "--version"], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert said.stdout.startswith("zbench 9.8.6 "), said.stdout + said.stderr
