"""The plugin's fixtures used from a plain test, as their docstrings and README "Fixtures and hooks" show."""

from __future__ import annotations

import textwrap


def test_the_golden_fixture_works_in_a_plain_test(project):
    project.pytester.makepyfile(test_plain=textwrap.dedent("""\
        import pytest

        @pytest.mark.zbench_scene("round.one")
        def test_round_looks_right(device, scene, golden):
            outcome = golden.check(scene.measure(device))
            assert outcome is not None
    """))
    (project.root / "pytest.ini").write_text("[pytest]\n")  # the plain test file is collected too
    written = project.run("test_plain.py", "--zbench-update-goldens=missing", goldens=True)
    written.assert_outcomes(passed=1)
    assert "KeyError" not in written.stdout.str()
    assert list((project.root / "goldens").rglob("round.one/frame-*.png"))
    compared = project.run("test_plain.py", goldens=True)
    compared.assert_outcomes(passed=1)
