"""The real CLI in a subprocess: output shapes, exit codes, config, suppression, stdin."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli

CLIP = textwrap.dedent('''\
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, None

    def clip_gradient_bwd(lo, hi, _, g):
        return (jnp.clip(g, lo, hi),)

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
''')
LO_MESSAGE = ("`lo` (position 0) is in nondiff_argnums but is used as an array: `jnp.clip(g, lo, hi)`; a traced "
              "value here raises UnexpectedTracerError under jit, vmap or grad. Pass it as a regular argument, "
              "save it in the residuals and return None for it from bwd")
HI_MESSAGE = LO_MESSAGE.replace("`lo` (position 0)", "`hi` (position 1)")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "clip.py").write_text(CLIP)
    (tmp_path / "pkg" / "plain.py").write_text("import jax\n\ndef f(x):\n    return x\n")
    return tmp_path


def test_text_output_lines_summary_and_exit_code(project):
    proc = run_cli("--output-format", "concise", "--no-cache", "pkg", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"pkg/clip.py:6:19: VJP101 [*] {LO_MESSAGE}",
        f"pkg/clip.py:6:23: VJP101 [*] {HI_MESSAGE}",
        "Found 2 problems (2 fixable with --fix).",
    ]
    assert proc.stderr == ""


def test_full_text_output_shows_the_source_line_and_fix(project):
    proc = run_cli("--no-cache", "pkg/clip.py", cwd=project)
    lines = proc.stdout.splitlines()
    import textwrap

    header = textwrap.wrap(f"pkg/clip.py:6:19: VJP101 [*] {LO_MESSAGE}", 100, subsequent_indent="    ",
                           break_long_words=False, break_on_hyphens=False)
    assert len(header) > 1 and all(len(line) <= 100 for line in header)  # long messages wrap
    assert " ".join(line.strip() for line in lines[:len(header)]) == f"pkg/clip.py:6:19: VJP101 [*] {LO_MESSAGE}"
    lines = lines[len(header) - 1:]
    assert lines[1] == "   6 | def clip_gradient(lo, hi, x):"
    assert lines[2] == "     |                   ^^"
    assert lines[3] == ("     = help: Move `lo`, `hi` out of nondiff_argnums into the residuals "
                        "(bwd returns None for them)")


def test_clean_tree_exits_zero(project):
    proc = run_cli("--no-cache", "pkg/plain.py", cwd=project)
    assert proc.returncode == 0
    assert proc.stdout == "All checks passed!\n"


def test_exit_zero_and_quiet(project):
    proc = run_cli("--exit-zero", "-q", "--output-format", "concise", "--no-cache", "pkg", cwd=project)
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 2
    assert "Found" not in proc.stdout


def test_json_output_has_ruffs_shape(project):
    proc = run_cli("--output-format", "json", "--no-cache", "pkg", cwd=project)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert [d["code"] for d in data] == ["VJP101", "VJP101"]
    first = data[0]
    assert set(first) >= {"code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url",
                          "severity"}
    assert first["location"] == {"row": 6, "column": 19}
    assert first["end_location"] == {"row": 6, "column": 21}
    assert first["message"] == LO_MESSAGE
    assert first["noqa_row"] == 6
    assert first["severity"] == "error"
    assert first["url"].endswith("docs/rules/VJP101.md")
    assert first["filename"] == "pkg/clip.py"


def test_statistics(project):
    proc = run_cli("--statistics", "--output-format", "concise", "--no-cache", "pkg", cwd=project)
    assert "2\tVJP101\t[*] nondiff-array" in proc.stdout.splitlines()


def test_select_ignore_and_prefixes(project):
    assert run_cli("--select", "VJP3", "--no-cache", "pkg", cwd=project).returncode == 0
    assert run_cli("--ignore", "VJP1", "--no-cache", "pkg", cwd=project).returncode == 0
    assert run_cli("--select", "VJP101", "--no-cache", "pkg", cwd=project).returncode == 1
    proc = run_cli("--select", "VJP3", "--extend-select", "VJP10", "--no-cache", "pkg", cwd=project)
    assert proc.returncode == 1


def test_unknown_rule_code_is_a_usage_error(project):
    proc = run_cli("--select", "VJP999", "pkg", cwd=project)
    assert proc.returncode == 2
    assert "unknown rule code or prefix 'VJP999'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_config_in_pyproject(project):
    (project / "pyproject.toml").write_text('[tool.vjplint]\nignore = ["VJP101"]\n')
    assert run_cli("--no-cache", "pkg", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.vjplint]\nper-file-ignores = { "pkg/clip.py" = ["VJP1"] }\n')
    assert run_cli("--no-cache", "pkg", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.vjplint]\nstatic-names = ["lo", "hi"]\n')
    assert run_cli("--no-cache", "pkg", cwd=project).returncode == 0


def test_unknown_config_key_names_the_key(project):
    (project / "pyproject.toml").write_text('[tool.vjplint]\nselekt = ["VJP1"]\n')
    proc = run_cli("pkg", cwd=project)
    assert proc.returncode == 2
    assert "unknown key in [tool.vjplint]: selekt" in proc.stderr


def test_explicit_config_file(project, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text('[tool.vjplint]\nselect = ["VJP3"]\n')
    assert run_cli("--config", str(other), "--no-cache", "pkg", cwd=project).returncode == 0
    proc = run_cli("--config", str(tmp_path / "missing.toml"), "pkg", cwd=project)
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_exclude_and_gitignore(project):
    (project / ".gitignore").write_text("pkg/clip.py\n")
    (project / ".git").mkdir()
    assert run_cli("--no-cache", ".", cwd=project).returncode == 0
    (project / ".gitignore").unlink()
    (project / "pyproject.toml").write_text('[tool.vjplint]\nextend-exclude = ["pkg"]\n')
    assert run_cli("--no-cache", ".", cwd=project).returncode == 0
    # A file named explicitly is linted anyway, unless --force-exclude (pre-commit).
    assert run_cli("--no-cache", "pkg/clip.py", cwd=project).returncode == 1
    assert run_cli("--no-cache", "--force-exclude", "pkg/clip.py", cwd=project).returncode == 0


def test_noqa_codes_bare_and_skip_file(project):
    path = project / "pkg" / "clip.py"
    path.write_text(CLIP.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa: VJP101"))
    assert run_cli("--no-cache", "pkg/clip.py", cwd=project).returncode == 0
    path.write_text(CLIP.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa"))
    assert run_cli("--no-cache", "pkg/clip.py", cwd=project).returncode == 0
    path.write_text("# vjplint: skip-file\n" + CLIP)
    assert run_cli("--no-cache", "pkg/clip.py", cwd=project).returncode == 0


def test_unused_and_malformed_noqa_are_reported(project):
    path = project / "pkg" / "clip.py"
    text = CLIP.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa VJP101")
    text = text.replace("    return x, None", "    return x, None  # noqa: VJP102")
    path.write_text(text)
    proc = run_cli("--output-format", "concise", "--no-cache", "pkg/clip.py", cwd=project)
    lines = proc.stdout.splitlines()
    assert "pkg/clip.py:6:32: VJP901 malformed `# noqa` directive: write `# noqa: VJP101` (with a colon)" in lines
    assert ("pkg/clip.py:10:21: VJP901 unused `# noqa` directive: no VJP102 diagnostic on this line; remove it"
            in lines)
    assert sum(": VJP101 [*]" in l for l in lines) == 2  # a malformed noqa does not suppress


def test_syntax_error_is_vjp900_and_the_run_goes_on(project):
    (project / "pkg" / "broken.py").write_text("import jax\n@jax.custom_vjp\ndef f(x:\n    return x\n")
    proc = run_cli("--output-format", "concise", "--no-cache", "pkg", cwd=project)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pkg/broken.py:3:6: VJP900 cannot parse this file: syntax error:")
    assert lines[1].startswith("pkg/clip.py:6:19: VJP101")


def test_stdin_with_filename(project):
    proc = run_cli("-", "--stdin-filename", "pkg/virtual.py", "--output-format", "concise", cwd=project,
                   stdin=CLIP.encode())
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"pkg/virtual.py:6:19: VJP101 [*] {LO_MESSAGE}"


def test_missing_path_is_an_error_and_the_run_continues(project):
    proc = run_cli("--no-cache", "--output-format", "concise", "nope.py", "pkg/clip.py", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr == "vjplint: error: nope.py: no such file or directory\n"
    assert proc.stdout.startswith("pkg/clip.py:6:19: VJP101")


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("vjplint 0.")


def test_rule_documentation_has_the_fixed_sections():
    proc = run_cli("rule", "VJP101")
    assert proc.returncode == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in proc.stdout
    assert proc.stdout.startswith("# nondiff-array (VJP101)")


def test_rule_all_and_unknown():
    proc = run_cli("rule", "--all")
    assert proc.returncode == 0
    assert proc.stdout.count("## What it does") >= 7
    bad = run_cli("rule", "VJP000")
    assert bad.returncode == 2 and "unknown rule" in bad.stderr


def test_off_by_default_rules_need_their_exact_code():
    target = (FIXTURES / "rules" / "VJP106" / "fire_annotated.py").relative_to(ROOT).as_posix()
    assert run_cli("--no-cache", target).returncode == 0
    assert run_cli("--no-cache", "--select", "VJP1", target).returncode == 0
    assert run_cli("--no-cache", "--select", "VJP106", target).returncode == 1
    assert run_cli("--no-cache", "--extend-select", "VJP106", target).returncode == 1


def test_target_vjp3_enables_them(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\ntarget = "vjp3"\n')
    source = (FIXTURES / "rules" / "VJP106" / "fire_annotated.py").read_text()
    (tmp_path / "m.py").write_text(source)
    proc = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert proc.returncode == 1 and ": VJP106 " in proc.stdout


def test_readme_rule_table_is_generated_from_the_rules():
    from vjplint.rules.docs import README_END, README_START, readme_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index(README_START) + len(README_START):text.index(README_END)].strip()
    assert table == readme_table(), "run `python -m vjplint.rules.docs` and commit README.md"
