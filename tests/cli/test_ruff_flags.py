"""The flags and keys a ruff user reaches for (issue 47), through the real CLI on real files:
--output-file, --show-files, --exclude/--extend-exclude, --extend-ignore, --fixable/--unfixable/
--extend-fixable and their [tool.vjplint] keys, --statistics in json, --help's usage line."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import ROOT, run_cli

SAFE = textwrap.dedent('''\
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
    ''')  # VJP101 at 7:10, a safe fix

UNSAFE = textwrap.dedent('''\
    from functools import partial
    import jax


    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x, scale):
        return x * scale


    def f_fwd(x, scale):
        return f(x, scale), None


    def f_bwd(scale, res, g):
        return (g * scale,)


    f.defvjp(f_fwd, f_bwd)
    ''')  # VJP102 at 6:10, an unsafe fix only

VJP101_LINE = ("a.py:7:10: VJP101 [*] `lo` (position 0) is in nondiff_argnums but is used as an array: "
               "`jnp.clip(g, lo, 1.0)`; a traced value here raises UnexpectedTracerError under jit, vmap or "
               "grad. Pass it as a regular argument, save it in the residuals and return None for it from bwd")


def _tree(tmp_path, pyproject: str = ""):
    (tmp_path / "a.py").write_text(SAFE)
    (tmp_path / "b.py").write_text(UNSAFE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.py").write_text(SAFE)
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    return tmp_path


def _codes(stdout: str):
    return [(d["filename"], d["code"], d["fix"]["applicability"] if d["fix"] else None) for d in json.loads(stdout)]


def test_output_file_takes_the_report_and_stdout_stays_empty(tmp_path):
    _tree(tmp_path)
    proc = run_cli("--no-cache", "--output-format", "concise", "--output-file", "reports/lint.txt", "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    assert (tmp_path / "reports" / "lint.txt").read_text() == \
        VJP101_LINE + "\nFound 1 problem (1 fixable with --fix).\n"
    proc = run_cli("--no-cache", "--output-format", "json", "-o", "out.json", "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert _codes((tmp_path / "out.json").read_text()) == [("a.py", "VJP101", "safe")]


def test_output_file_that_cannot_be_written_is_a_clear_error(tmp_path):
    _tree(tmp_path)
    (tmp_path / "blocker").write_text("")
    proc = run_cli("--no-cache", "--output-file", "blocker/out.txt", "a.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("vjplint: error: --output-file blocker/out.txt: cannot write: ")


def test_show_files_lists_absolute_sorted_paths_and_honours_excludes(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nextend-exclude = ["b.py"]\n')
    proc = run_cli("--show-files", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"{tmp_path / 'a.py'}\n{tmp_path / 'sub' / 'c.py'}\n"
    proc = run_cli("--show-files", "--fix", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "--show-files lists the files a check would read" in proc.stderr


def test_exclude_on_the_command_line_replaces_and_extend_exclude_adds(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nextend-exclude = ["b.py"]\n')
    # --extend-exclude adds a path pattern (relative to the working directory) to the file's
    proc = run_cli("--show-files", "--extend-exclude", "sub/c.py", ".", cwd=tmp_path)
    assert proc.stdout == f"{tmp_path / 'a.py'}\n"
    # --exclude replaces `exclude` (the defaults); the file's extend-exclude still applies, as in ruff
    proc = run_cli("--show-files", "--exclude", "a.py,sub", ".", cwd=tmp_path)
    assert proc.stdout == ""
    assert proc.stderr == "vjplint: warning: No Python files found under .\n"
    # from a subdirectory, a path pattern is relative to where vjplint runs
    proc = run_cli("--show-files", "--extend-exclude", "c.py", "..", cwd=tmp_path / "sub")
    assert proc.stdout == f"{tmp_path / 'a.py'}\n"
    proc = run_cli("--no-cache", "--output-format", "json", "--extend-exclude", "sub/", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", "safe")]


def test_extend_ignore_flag_and_key_add_to_ignore(tmp_path):
    _tree(tmp_path)
    proc = run_cli("--no-cache", "--output-format", "json", "--extend-ignore", "VJP101", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("b.py", "VJP102", "unsafe")]
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend-ignore = ["VJP102"]\n')
    proc = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", "safe"), ("sub/c.py", "VJP101", "safe")]
    proc = run_cli("--no-cache", "--extend-ignore", "VJP9999", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "vjplint: error: --extend-ignore: unknown rule code or prefix 'VJP9999'\n")


def test_unfixable_key_takes_the_fix_away_everywhere(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nunfixable = ["VJP101"]\n')
    proc = run_cli("--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert proc.stdout == VJP101_LINE.replace(" [*]", "") + "\nFound 1 problem.\n"
    proc = run_cli("--no-cache", "--output-format", "json", "a.py", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", None)]
    before = (tmp_path / "a.py").read_text()
    proc = run_cli("--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert proc.returncode == 1 and (tmp_path / "a.py").read_text() == before
    # --extend-fixable cannot win over unfixable (ruff's: unfixable is subtracted last)
    proc = run_cli("--no-cache", "--output-format", "json", "--extend-fixable", "VJP101", "a.py", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", None)]


def test_fixable_replaces_and_extend_fixable_adds(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nfixable = ["VJP2"]\n')
    proc = run_cli("--no-cache", "--output-format", "json", "--unsafe-fixes", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", None), ("b.py", "VJP102", None), ("sub/c.py", "VJP101", None)]
    proc = run_cli("--no-cache", "--output-format", "json", "--extend-fixable", "VJP101", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", "safe"), ("b.py", "VJP102", None), ("sub/c.py", "VJP101", "safe")]
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend-fixable = ["VJP102"]\nfixable = ["VJP2"]\n')
    proc = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", None), ("b.py", "VJP102", "unsafe"), ("sub/c.py", "VJP101", None)]
    # the command line's --fixable replaces the file's
    proc = run_cli("--no-cache", "--output-format", "json", "--fixable", "VJP101", ".", cwd=tmp_path)
    assert _codes(proc.stdout) == [("a.py", "VJP101", "safe"), ("b.py", "VJP102", "unsafe"), ("sub/c.py", "VJP101", "safe")]
    proc = run_cli("--no-cache", "--unfixable", "VJP101,VJP102", "--fix", ".", cwd=tmp_path)
    assert proc.stdout.endswith("Found 3 problems.\n") and (tmp_path / "a.py").read_text() == SAFE


def test_fix_keys_are_validated_like_select(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nunfixable = "VJP101"\n')
    proc = run_cli("--no-cache", "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "vjplint: error: pyproject.toml: `unfixable` must be a list of rule codes\n")
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend-fixable = ["VJP7"]\n')
    proc = run_cli("--no-cache", "a.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("vjplint: error: pyproject.toml: `extend-fixable`: ")


def test_show_settings_shows_the_new_keys_and_flags(tmp_path):
    _tree(tmp_path, '[tool.vjplint]\nunfixable = ["VJP102"]\nextend-ignore = ["VJP5"]\n')
    proc = run_cli("--show-settings", "a.py", "--extend-exclude", "sub", "--extend-fixable", "VJP2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert '  unfixable = ["VJP102"]  (from pyproject.toml)' in lines
    assert '  extend-ignore = ["VJP5"]  (from pyproject.toml)' in lines
    assert "  fixable = null  (default)" in lines
    assert "  extend-fixable = []  (default)" in lines
    assert "  command line: --extend-fixable VJP2 --extend-exclude sub" in lines
    assert "  fixes not offered (fixable/unfixable): VJP102" in lines
    assert not any(line.startswith("  enabled rules") and "VJP501" in line for line in lines)
    data = json.loads(run_cli("--show-settings", "a.py", "--output-format", "json", cwd=tmp_path).stdout)
    assert data["settings"]["unfixable"] == ["VJP102"] and data["fixes_not_offered_for"] == ["VJP102"]


def test_statistics_as_json_is_ruffs_list(tmp_path):
    _tree(tmp_path)
    proc = run_cli("--no-cache", "--statistics", "--output-format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == [
        {"code": "VJP101", "name": "nondiff-array", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "VJP102", "name": "nondiff-maybe-array", "count": 1, "fixable": False, "fixable_count": 0},
    ]
    proc = run_cli("--no-cache", "--statistics", "--unsafe-fixes", "--output-format", "json", "b.py", cwd=tmp_path)
    assert json.loads(proc.stdout) == [
        {"code": "VJP102", "name": "nondiff-maybe-array", "count": 1, "fixable": True, "fixable_count": 1}]
    # some of a rule's findings fixable: ruff's `fixable` is false, the count says how many; `[-]` in text
    # d.py: fwd is used elsewhere in the file, so its VJP101 offers no fix
    (tmp_path / "d.py").write_text(SAFE.replace("clip.defvjp(clip_fwd, clip_bwd)",
                                                "clip.defvjp(clip_fwd, clip_bwd)\nprint(clip_fwd)"))
    proc = run_cli("--no-cache", "--statistics", "--output-format", "json", "a.py", "d.py", cwd=tmp_path)
    assert json.loads(proc.stdout)[0] == {"code": "VJP101", "name": "nondiff-array", "count": 2, "fixable": False,
                                          "fixable_count": 1}, proc.stdout
    proc = run_cli("--no-cache", "--statistics", "a.py", "d.py", cwd=tmp_path)
    assert proc.stdout.startswith("2\tVJP101\t[-] nondiff-array\n"), proc.stdout
    (tmp_path / "d.py").unlink()
    proc = run_cli("--no-cache", "--statistics", ".", cwd=tmp_path)
    assert proc.stdout == ("2\tVJP101\t[*] nondiff-array\n1\tVJP102\t[ ] nondiff-maybe-array\n"
                           "Found 3 problems (2 fixable with --fix). (1 hidden fix can be enabled with --unsafe-fixes.)\n")
    for i in range(9):  # ruff's column: the counts right-aligned to the widest
        (tmp_path / f"copy{i}.py").write_text(SAFE)
    proc = run_cli("--no-cache", "--statistics", ".", cwd=tmp_path)
    assert proc.stdout.startswith("11\tVJP101\t[*] nondiff-array\n 1\tVJP102\t[ ] nondiff-maybe-array\n"), proc.stdout


def test_statistics_refuses_the_formats_ruff_refuses(tmp_path):
    _tree(tmp_path)
    for fmt in ("sarif", "github", "junit"):
        proc = run_cli("--no-cache", "--statistics", "--output-format", fmt, ".", cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == ("vjplint: error: --statistics prints a text table (text, concise) or a JSON list "
                               f"(json), not '{fmt}'\n")


def test_help_usage_names_the_command_as_typed():
    proc = run_cli("check", "--help")
    assert proc.stdout.startswith("usage: vjplint check [-h] ")
    assert "commands:" not in proc.stdout
    for flag in ("--output-file", "--show-files", "--exclude", "--extend-exclude", "--extend-ignore",
                 "--fixable", "--unfixable", "--extend-fixable", "--watch", "--color"):
        assert f"  {flag}" in proc.stdout or f", {flag}" in proc.stdout, flag
    proc = run_cli("--help")
    assert proc.stdout.startswith("usage: vjplint [-h] ") and "\ncommands:\n" in proc.stdout
    proc = run_cli("check", "--output-format", "nope")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: vjplint check ")


def test_rule_help_describes_output_format():
    proc = run_cli("rule", "--help")
    text = " ".join(proc.stdout.split())
    assert "--output-format {text,json} text: the rule's page as Markdown (default); json:" in text


def _undescribed(help_text: str) -> list:
    """The options of an argparse --help with no description (neither beside them nor below)."""
    lines = help_text.split("\n")
    start = lines.index("options:") + 1
    bare = []
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.startswith("  -"):
            continue
        if "  " in line.strip():
            continue  # its description is on the same line
        below = lines[i + 1] if i + 1 < len(lines) else ""
        if not below.startswith("    ") or below.lstrip().startswith("-"):
            bare.append(line.strip())
    return bare


@pytest.mark.parametrize("command", ["check", "rule", "verify", "check-grads", "server"])
def test_every_option_of_every_command_is_described(command):
    proc = run_cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert _undescribed(proc.stdout) == [], proc.stdout


def test_check_grads_python_must_name_an_interpreter(tmp_path):
    """As verify's `--python`: a usage error, not a "not checked" per derivative and exit 0."""
    proc = run_cli("check-grads", "--python", str(tmp_path / "nope"), "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"vjplint: error: --python {tmp_path / 'nope'}: no such interpreter (give the path of a "
                           "Python executable, e.g. .venv/bin/python)\n")


def test_paths_outside_the_working_directory_print_absolute_in_every_format(tmp_path):
    """As ruff names them: relative under the working directory, absolute elsewhere (never
    `../a.py`, which a CI annotation or a problem matcher cannot place)."""
    _tree(tmp_path)
    (tmp_path / "work").mkdir()
    outside = str(tmp_path / "a.py")
    for args, expected in (
            (("--output-format", "concise"), f"{outside}:7:10: VJP101 [*] "),
            (("--output-format", "github"), f"::error file={outside},line=7,col=10,"),
            ((), f"{outside}:7:10: VJP101 [*] ")):
        proc = run_cli("--no-cache", *args, "../a.py", cwd=tmp_path / "work")
        assert proc.stdout.startswith(expected), (args, proc.stdout)
        assert "../" not in proc.stdout
    proc = run_cli("--no-cache", "--output-format", "json", "../a.py", "../work/../sub", cwd=tmp_path / "work")
    assert [d["filename"] for d in json.loads(proc.stdout)] == [outside, str(tmp_path / "sub" / "c.py")]
    # under the working directory, a path through `..` is shown relative
    proc = run_cli("--no-cache", "--output-format", "json", "sub/../a.py", cwd=tmp_path)
    assert [d["filename"] for d in json.loads(proc.stdout)] == ["a.py"]
    proc = run_cli("--no-cache", "--diff", "../a.py", cwd=tmp_path / "work")
    assert proc.stdout.startswith(f"--- {outside}\n+++ {outside}\n"), proc.stdout


def test_exit_zero_holds_for_diff_as_in_ruff(tmp_path) -> None:
    """`--diff --exit-zero` prints the diff and exits 0, as ruff does (ruff 0.17.6, measured);
    `--diff` alone exits 1 when there is something to fix."""
    import shutil

    target = tmp_path / "ops.py"
    shutil.copy(ROOT / "fixtures" / "rules" / "VJP307" / "fire_dict_keyed_by_parameter_name.py", target)
    zero = run_cli("check", "--no-cache", "--diff", "--exit-zero", str(target))
    plain = run_cli("check", "--no-cache", "--diff", str(target))
    assert (zero.returncode, plain.returncode) == (0, 1), zero.stderr + plain.stderr
    assert "+    return (2.0 * x * g,)" in zero.stdout and zero.stdout == plain.stdout
    assert zero.stderr == plain.stderr == "Would fix 1 problem.\n"
