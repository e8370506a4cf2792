"""What a new user meets first: vjplint never says "All checks passed!" when it checked nothing or
failed, mistyped commands and settings get a suggestion, bad options are refused, and the links
it prints resolve."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.conftest import ROOT, run_cli


HAZARD = textwrap.dedent('''\
    from functools import partial
    import jax
    import jax.numpy as jnp


    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def clip(lo, x):
        return x


    def clip_fwd(lo, x):
        return x, None


    def clip_bwd(lo, _, g):
        return (jnp.clip(g, lo, 1.0),)


    clip.defvjp(clip_fwd, clip_bwd)
    ''')


@pytest.mark.parametrize("setup, args, code, stderr", [
    (lambda p: None, ["missing.py"], 2, "vjplint: error: missing.py: no such file or directory\n"),
    (lambda p: (p / "empty").mkdir(), ["empty"], 0, "vjplint: warning: No Python files found under empty\n"),
    (lambda p: ((p / "docs").mkdir(), (p / "docs" / "a.txt").write_text("x")), ["docs"], 0,
     "vjplint: warning: No Python files found under docs\n"),
    (lambda p: ((p / "nb.ipynb").write_text('{"cells": []}'),  # notebooks are linted unless turned off
                (p / "pyproject.toml").write_text("[tool.vjplint]\nnotebooks = false\n")), ["nb.ipynb"], 0,
     "vjplint: warning: nb.ipynb: notebooks are turned off (`notebooks = false`); skipped\n"
     "vjplint: warning: No Python files found under nb.ipynb\n"),
    (lambda p: None, ["rules"], 2,
     "vjplint: error: 'rules' is neither a command nor a file or directory; did you mean `vjplint rule`?\n"),
], ids=["missing-path", "empty-dir", "no-python-files", "notebook", "typo-for-rule"])
def test_no_reassurance_when_nothing_was_checked_or_something_failed(tmp_path, setup, args, code, stderr):
    setup(tmp_path)
    proc = run_cli("--no-cache", *args, cwd=tmp_path) if args != ["rules"] else run_cli(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, "", stderr)


def test_an_internal_error_is_not_all_checks_passed(tmp_path):
    (tmp_path / "plain.py").write_text("import jax\n")
    proc = run_cli("--no-cache", "plain.py", "gone.py", cwd=tmp_path)
    assert proc.returncode == 2 and "All checks passed" not in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--select", ""], "vjplint: error: --select: no rule codes given (an empty value would select nothing)\n"),
    (["-j", "0"], "--jobs must be at least 1, not 0"),
    (["-j", "-3"], "--jobs must be at least 1, not -3"),
    (["--config", "."], "vjplint: error: --config .: is a directory; give the path of a pyproject.toml\n"),
])
def test_bad_options_are_refused(tmp_path, args, message):
    (tmp_path / "m.py").write_text(HAZARD)
    proc = run_cli("--no-cache", *args, "m.py", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr


def test_unknown_verify_keys_are_refused_by_every_command_alike(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint.verify]\ntimout = 3\n")
    (tmp_path / "m.py").write_text(HAZARD)
    message = ("vjplint: error: pyproject.toml: unknown key in [tool.vjplint.verify]: timout (did you mean "
               "'timeout'?) (known keys: examples, timeout, python)\n")
    for args in (["m.py"], ["--fix", "--verify", "m.py"], ["verify", "m.py"]):
        proc = run_cli("--no-cache", *args, cwd=tmp_path) if args[0] != "verify" else run_cli(*args, cwd=tmp_path)
        assert (proc.returncode, proc.stderr) == (2, message), args


def test_statistics_prints_the_table_not_every_diagnostic(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD)
    proc = run_cli("--no-cache", "--statistics", "m.py", cwd=tmp_path)
    assert proc.stdout == "1\tVJP101\t[*] nondiff-array\nFound 1 problem (1 fixable with --fix).\n"


def test_help_lists_the_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for command in ("check", "rule", "verify", "server"):
        assert f"\n  {command} " in proc.stdout


def test_nul_bytes_are_shown_as_control_pictures(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"import jax  # custom_vjp\nx = (\x00\n")
    proc = run_cli("--no-cache", "bad.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "\x00" not in proc.stdout
    assert "   2 | x = (\u2400" in proc.stdout


def test_long_messages_wrap_in_text_and_stay_one_line_in_concise(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD)
    full = run_cli("--no-cache", "m.py", cwd=tmp_path).stdout.splitlines()
    concise = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path).stdout.splitlines()
    assert all(len(line) <= 100 for line in full)
    assert full[1].startswith("    ") and concise[0].startswith("m.py:7:10: VJP101 [*] `lo` (position 0)")
    assert " ".join(line.strip() for line in full[:3] if not line.startswith("   7 |")).startswith(concise[0][:90])


def test_a_write_failure_names_the_users_file_not_a_temporary_one(tmp_path, monkeypatch, capsys):
    import tempfile

    from vjplint.cli import main

    def refuse(*args, dir=None, **kwargs):  # what a read-only directory does (root ignores chmod here)
        raise PermissionError(13, "Permission denied", os.path.join(dir or ".", ".m.py.x1y2.vjplint-tmp"))

    (tmp_path / "m.py").write_text(HAZARD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert main(["--no-cache", "--fix", "m.py"]) == 2
    err = capsys.readouterr().err
    assert "vjplint: error: m.py: cannot write the fixed file: Permission denied\n" in err
    assert "vjplint-tmp" not in err
    assert (tmp_path / "m.py").read_text() == HAZARD


def test_rule_links_resolve_to_the_shipped_pages_and_can_be_configured(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD)
    (d,) = json.loads(run_cli("--no-cache", "--output-format", "json", "m.py", cwd=tmp_path).stdout)
    url = urlparse(d["url"])
    assert url.scheme == "file" and Path(unquote(url.path)).read_text().startswith("# nondiff-array (VJP101)")
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\ndocs-url = "https://example.org/vjplint/{code}.html"\n')
    for fmt, pick in (("json", lambda out: out[0]["url"]),
                      ("lsp", lambda out: next(iter(out.values()))[0]["codeDescription"]["href"])):
        out = json.loads(run_cli("--no-cache", "--output-format", fmt, "m.py", cwd=tmp_path).stdout)
        assert pick(out) == "https://example.org/vjplint/VJP101.html"
    sarif = json.loads(run_cli("--no-cache", "--output-format", "sarif", "m.py", cwd=tmp_path).stdout)
    rules = {r["id"]: r["helpUri"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["VJP101"] == "https://example.org/vjplint/VJP101.html"


def test_every_shipped_rule_page_exists():
    from vjplint.links import DEFAULT_DOCS_URL, rule_url
    from vjplint.rules.registry import all_rules

    for code in all_rules():
        assert Path(unquote(urlparse(rule_url(code, DEFAULT_DOCS_URL)).path)).is_file(), code


def test_stubs_report_only_what_the_declaration_itself_gets_wrong(tmp_path):
    (tmp_path / "api.pyi").write_text(textwrap.dedent('''\
        from functools import partial
        import jax

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def clip(lo: jax.Array, x: jax.Array) -> jax.Array: ...

        @partial(jax.custom_vjp, nondiff_argnums=1)
        def scale(x: jax.Array, n: int) -> jax.Array: ...
        '''))
    proc = run_cli("--no-cache", "--output-format", "concise", "api.pyi", cwd=tmp_path)
    assert [line.split(" ", 2)[1] for line in proc.stdout.splitlines()[:-1]] == ["VJP103"]
    assert proc.stdout.splitlines()[0].startswith("api.pyi:7:42: VJP103 [*] nondiff_argnums of")


def test_realworld_report_has_a_real_command_line(tmp_path):
    import subprocess
    import sys

    script = str(ROOT / "benchmarks" / "realworld_report.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    help_ = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, env=env)
    assert help_.returncode == 0 and help_.stdout.startswith("usage: realworld_report.py [-h] TREE [TREE ...]")
    missing = subprocess.run([sys.executable, script, str(tmp_path / "nope")], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "not a directory" in missing.stderr


def test_fix_verify_without_jax_is_an_error_and_writes_nothing(tmp_path):
    import venv

    venv.create(tmp_path / "nojax", with_pip=False)  # an interpreter that cannot import JAX
    python = tmp_path / "nojax" / "bin" / "python"
    (tmp_path / "pyproject.toml").write_text(f'[tool.vjplint.verify]\npython = "{python}"\n')
    (tmp_path / "m.py").write_text(HAZARD)
    proc = run_cli("--no-cache", "--fix", "--verify", "m.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "All checks passed" not in proc.stdout
    assert "vjplint: error: --verify needs JAX: " in proc.stderr and "nothing was written for m.py" in proc.stderr
    assert (tmp_path / "m.py").read_text() == HAZARD
