"""Every rule's fixture directory through the real CLI (a `cli` layer test; the unit layer's
tests/unit/test_rule_snapshots.py checks the same fixtures in-process, in more detail).

`fixtures/rules/<CODE>/expected.txt` is the exact concise output of `vjplint --select <CODE>
--output-format concise fixtures/rules/<CODE>`: it marks where each fire_*.py fixture fires, and
silent_*.py fixtures appear nowhere in it. Regenerate it with VJPLINT_UPDATE_EXPECTED=1 and review
the diff.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT, rule_fixture_dirs, run_cli


@pytest.mark.parametrize("directory", rule_fixture_dirs(), ids=lambda p: p.name)
def test_rule_fixtures_match_expected_output(directory):
    code = directory.name
    relative = directory.relative_to(ROOT).as_posix()
    proc = run_cli("--select", code, "--output-format", "concise", "--no-cache", relative)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr == ""
    expected_file = directory / "expected.txt"
    if os.environ.get("VJPLINT_UPDATE_EXPECTED"):
        expected_file.write_text(proc.stdout, encoding="utf-8")
    assert proc.stdout == expected_file.read_text(encoding="utf-8")


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
