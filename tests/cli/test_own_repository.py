"""`vjplint` in this repository's root is clean (issue 47): its pyproject.toml leaves out the
fixtures and evaluation cases, which are hazards on purpose, and they are still linted when named,
as ruff lints an excluded path given on the command line (unless --force-exclude)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import CLIP
from tests.conftest import ROOT, run_cli


def test_plain_vjplint_in_the_repository_root_is_clean():
    proc = run_cli("--no-cache", cwd=ROOT)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "All checks passed!\n", "")


def test_a_directory_inside_an_excluded_one_is_linted_when_named(tmp_path: Path):
    (tmp_path / "fixtures" / "rules").mkdir(parents=True)
    (tmp_path / "fixtures" / "rules" / "clip.py").write_text(CLIP)
    (tmp_path / "plain.py").write_text("import jax\n")
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend-exclude = ["fixtures"]\n')
    assert run_cli("--no-cache", cwd=tmp_path).stdout == "All checks passed!\n"
    for named in ("fixtures", "fixtures/rules", "fixtures/rules/"):
        proc = run_cli("--no-cache", "--output-format", "concise", named, cwd=tmp_path)
        assert proc.returncode == 1 and [line.split(" ", 2)[:2] for line in proc.stdout.splitlines()[:2]] == [
            ["fixtures/rules/clip.py:6:19:", "VJP101"], ["fixtures/rules/clip.py:6:23:", "VJP101"]], named
        skipped = run_cli("--no-cache", "--force-exclude", named, cwd=tmp_path)
        assert skipped.returncode == 0 and "No Python files found" in skipped.stderr, named


def test_per_file_ignores_turn_off_the_unused_noqa_report(tmp_path: Path):
    """VJP901 is reported after the other codes are filtered: per-file-ignores must reach it too
    (this repository's own sources quote `# noqa: VJP602` in docstrings)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "doc.py").write_text('"""For a jax.custom_vjp the codemod writes `# noqa: VJP602`."""\n')
    assert run_cli("--no-cache", "--output-format", "concise", cwd=tmp_path).stdout.splitlines()[0] == (
        "pkg/doc.py:1:45: VJP901 unused `# noqa` directive: no VJP602 diagnostic on this line; remove it")
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nper-file-ignores = { "pkg/*" = ["VJP901"] }\n')
    assert run_cli("--no-cache", cwd=tmp_path).stdout == "All checks passed!\n"
