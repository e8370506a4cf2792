"""Every rule's fixture directory through the CLI (a `cli` layer test; the unit layer's
tests/unit/test_rule_snapshots.py checks the same fixtures in-process, in more detail).

`fixtures/rules/<CODE>/expected.txt` is the exact concise output of `vjplint --select <CODE>
--output-format concise fixtures/rules/<CODE>`: it marks where each fire_*.py fixture fires, and
silent_*.py fixtures appear nowhere in it. Regenerate it with VJPLINT_UPDATE_EXPECTED=1 and review
the diff.

The per-rule commands run in one process that calls the CLI's entry point (`vjplint.cli.main`,
what `python -m vjplint` calls) once per rule with that command line: one interpreter and one
import of vjplint instead of one per rule (61 processes cost this file most of its time). The
showcase test below runs `python -m vjplint` itself over every fixture, as users do.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List

import pytest

from tests.conftest import ROOT, pythonpath, rule_fixture_dirs, run_cli

# One process, the CLI's entry point once per rule (argv as given), each run's stdout, stderr and
# exit code kept apart; SystemExit counts as an exit code, as it would for `python -m vjplint`.
_DRIVER = """
import contextlib, io, json, sys
from vjplint.cli import main
out = {}
for code, relative in json.loads(sys.argv[1]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            rc = main(["--select", code, "--output-format", "concise", "--no-cache", relative])
        except SystemExit as exit:
            rc = exit.code if isinstance(exit.code, int) else 1
    out[code] = [rc, stdout.getvalue(), stderr.getvalue()]
sys.__stdout__.write(json.dumps(out))
"""


@pytest.fixture(scope="module")
def cli_outputs() -> Dict[str, List]:
    import subprocess

    runs = [(d.name, d.relative_to(ROOT).as_posix()) for d in rule_fixture_dirs()]
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(runs)], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("directory", rule_fixture_dirs(), ids=lambda p: p.name)
def test_rule_fixtures_match_expected_output(directory, cli_outputs):
    returncode, stdout, stderr = cli_outputs[directory.name]
    assert returncode in (0, 1), stderr
    assert stderr == ""
    expected_file = directory / "expected.txt"
    if os.environ.get("VJPLINT_UPDATE_EXPECTED"):
        expected_file.write_text(stdout, encoding="utf-8")
    assert stdout == expected_file.read_text(encoding="utf-8")


def test_the_showcase_command_reports_every_firing_fixture_and_no_look_alike():
    """The README's `vjplint fixtures/`; the default-off rules (VJP106, VJP107) need their codes,
    and VJP106's job is to flag code that is legal today (some look-alikes of VJP101)."""

    def reported(*args: str) -> set:
        proc = run_cli("--no-cache", "--output-format", "concise", *args, "fixtures")
        assert proc.returncode == 1 and proc.stderr == ""
        return {line.split(":", 1)[0] for line in proc.stdout.splitlines() if ": VJP" in line}

    fire = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("fixtures/rules/*/fire_*.py")}
    silent = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("fixtures/rules/*/silent_*.py")}
    default = reported()
    assert {f for f in fire if "/VJP106/" not in f and "/VJP107/" not in f} <= default
    assert not silent & default
    assert fire <= reported("--extend-select", "VJP106,VJP107")
