"""`--add-noqa`: a baseline for a large code base. The pure pass (vjplint.fixes.noqa.add_noqa) on
its hazards, then the real CLI on a tree written here: after it the next run is clean and a
second `--add-noqa` changes nothing."""

from __future__ import annotations

import codecs
import os
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import lint, run_cli
from vjplint.fixes.noqa import add_noqa

CLIP = textwrap.dedent('''\
    from functools import partial

    import jax
    import jax.numpy as jnp


    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):{comment}
        return x


    def clip_gradient_fwd(lo, hi, x):
        return x, None


    def clip_gradient_bwd(lo, hi, _, g):
        return (jnp.clip(g, lo, hi),)


    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


    def trigger():
        {trigger}
    ''')
TRIGGER = "return jax.jit(lambda lo, hi, x: clip_gradient(lo, hi, x) * 2)(-0.5, 0.5, 1.0)"
# The finding (VJP101, row 9) is inside a def that spans four lines.
MULTILINE = textwrap.dedent('''\
    from functools import partial

    import jax
    import jax.numpy as jnp


    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scale(
        weights: jax.Array,
        x,
    ):
        return x


    def scale_fwd(weights, x):
        return x, None


    def scale_bwd(weights, _, g):
        return (g * weights,)


    scale.defvjp(scale_fwd, scale_bwd)
    ''')


def _codes(text: str):
    return [(d.code, d.location.row) for d in lint(text)]


def test_merges_with_an_existing_noqa_and_adds_one_directive_per_line() -> None:
    text = CLIP.format(comment="  # noqa: E501", trigger=TRIGGER)
    assert _codes(text) == [("VJP101", 8), ("VJP101", 8), ("VJP104", 24), ("VJP104", 24)]
    result = add_noqa(text, lint(text))
    assert result.added == 2 and result.unsuppressible == []
    lines = result.text.splitlines()
    assert lines[7] == "def clip_gradient(lo, hi, x):  # noqa: E501, VJP101"
    assert lines[23] == f"    {TRIGGER}  # noqa: VJP104"
    assert _codes(result.text) == []
    assert add_noqa(result.text, lint(result.text)).text == result.text


def test_a_multi_line_statement_gets_the_comment_on_the_reported_line() -> None:
    result = add_noqa(MULTILINE, lint(MULTILINE))
    assert result.text.splitlines()[8] == "    weights: jax.Array,  # noqa: VJP101"
    assert result.added == 1 and _codes(result.text) == []


@pytest.mark.parametrize("trigger, why", [
    # the reported line opens a string that goes on: the comment would be part of the string
    ('return jax.jit(lambda lo, hi, x: clip_gradient(lo, hi, x) * len("""\n    """))(-0.5, 0.5, 1.0)', "string"),
    # a backslash continuation: a comment after it is a syntax error
    ('return jax.jit(lambda lo, hi, x: clip_gradient(lo, hi, x) \\\n        * 2)(-0.5, 0.5, 1.0)', "continuation"),
])
def test_lines_where_no_comment_can_go_are_left_alone_and_returned(trigger: str, why: str) -> None:
    text = CLIP.format(comment="", trigger=trigger)
    assert [c for c, _ in _codes(text)] == ["VJP101", "VJP101", "VJP104", "VJP104"]
    result = add_noqa(text, lint(text))
    assert [(d.code, d.noqa_row) for d in result.unsuppressible] == [("VJP104", 24), ("VJP104", 24)]
    assert result.added == 1  # the def line only
    assert result.text.splitlines()[23] == text.splitlines()[23]
    assert _codes(result.text) == [("VJP104", 24), ("VJP104", 24)]


def test_syntax_errors_cannot_be_suppressed() -> None:
    text = "import jax\n@jax.custom_vjp\ndef f(x:\n"
    result = add_noqa(text, lint(text))
    assert result.text == text and [d.code for d in result.unsuppressible] == ["VJP900"]


def test_malformed_and_crlf() -> None:
    text = CLIP.format(comment="  # noqa VJP101", trigger=TRIGGER).replace("\n", "\r\n")
    result = add_noqa(text, lint(text))
    assert "def clip_gradient(lo, hi, x):  # noqa: VJP101\r\n" in result.text
    assert f"    {TRIGGER}  # noqa: VJP104\r\n" in result.text
    assert result.text.count("\r\n") == text.count("\r\n") and "\n" not in result.text.replace("\r\n", "")
    assert _codes(result.text) == []


# -- the real CLI -----------------------------------------------------------------------------
def _tree(root: Path) -> Dict[str, bytes]:
    files = {
        "pkg/clip.py": CLIP.format(comment="  # noqa: E501", trigger=TRIGGER).encode(),
        "pkg/multiline.py": MULTILINE.encode(),
        # BOM, CRLF and latin-1 declared: all kept
        "pkg/crlf.py": codecs.BOM_UTF8 + CLIP.format(comment="", trigger=TRIGGER).replace("\n", "\r\n").encode(),
        "pkg/latin.py": ("# -*- coding: latin-1 -*-\n# café\n" + MULTILINE).encode("latin-1"),
        "pkg/clean.py": b"import jax\n\nprint(jax.numpy.ones(3))\n",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    os.chmod(root / "pkg/clip.py", 0o640)
    return files


@pytest.mark.cli
def test_cli_baseline_then_clean_then_nothing_to_add(tmp_path: Path) -> None:
    before = _tree(tmp_path)
    first = run_cli("--no-cache", "--add-noqa", ".", cwd=tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "Added 6 noqa directives.\n")
    after = {name: (tmp_path / name).read_bytes() for name in before}
    assert after["pkg/clean.py"] == before["pkg/clean.py"]
    assert b"def clip_gradient(lo, hi, x):  # noqa: E501, VJP101\n" in after["pkg/clip.py"]
    assert after["pkg/crlf.py"].startswith(codecs.BOM_UTF8)
    assert b"def clip_gradient(lo, hi, x):  # noqa: VJP101\r\n" in after["pkg/crlf.py"]
    assert "    weights: jax.Array,  # noqa: VJP101\n" in after["pkg/latin.py"].decode("latin-1")
    assert "# café" in after["pkg/latin.py"].decode("latin-1")
    assert os.stat(tmp_path / "pkg/clip.py").st_mode & 0o777 == 0o640
    # only the comments changed
    for name in before:
        old, new = before[name].splitlines(), after[name].splitlines()
        assert len(old) == len(new)
        assert [n for o, n in zip(old, new) if o != n] == [n for n in new if n not in old]
        assert all(n.split(b"  # noqa")[0] == o.split(b"  # noqa")[0] for o, n in zip(old, new))

    clean = run_cli("--no-cache", ".", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "All checks passed!\n")
    again = run_cli("--no-cache", "--add-noqa", ".", cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert {name: (tmp_path / name).read_bytes() for name in before} == after


@pytest.mark.cli
def test_cli_names_what_it_cannot_suppress(tmp_path: Path) -> None:
    trigger = 'return jax.jit(lambda lo, hi, x: clip_gradient(lo, hi, x) * len("""\n    """))(-0.5, 0.5, 1.0)'
    (tmp_path / "s.py").write_text(CLIP.format(comment="", trigger=trigger))
    proc = run_cli("--no-cache", "--add-noqa", "s.py", cwd=tmp_path)
    assert proc.returncode == 1
    warning = ("vjplint: warning: s.py:24:52: VJP104 cannot be suppressed with `# noqa` on line 24: a comment "
               "there would be part of a string or a continued line\n")
    assert proc.stderr == warning + warning.replace("24:52", "24:56") + "Added 1 noqa directive.\n"


@pytest.mark.cli
def test_cli_refuses_fix_and_stdin(tmp_path: Path) -> None:
    for args in (["--add-noqa", "--fix", "."], ["--add-noqa", "-"]):
        proc = run_cli("--no-cache", *args, cwd=tmp_path, stdin=b"")
        assert (proc.returncode, proc.stderr) == (
            2, "vjplint: error: --add-noqa cannot be combined with --fix, --diff or stdin\n")


# -- progress on a terminal ---------------------------------------------------------------------
_WITH_PROGRESS_NOW = ("import sys, vjplint.cli.check as check; check.PROGRESS_DELAY_S = 0.0; "
                      "from vjplint.cli import main; sys.exit(main(sys.argv[1:]))")


def _run_on_pty(cwd: Path, args: List[str], stderr_tty: bool) -> str:
    """vjplint with stderr on a pseudo-terminal (or a pipe) and stdout a pipe; what stderr got.
    The counter's 2-second delay is set to 0 so that a short run shows it."""
    import pty
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    master, slave = pty.openpty() if stderr_tty else os.pipe()[::-1]
    try:
        proc = subprocess.Popen([sys.executable, "-c", _WITH_PROGRESS_NOW, *args], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.communicate(timeout=120)
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def _counter(total: int) -> str:
    return "".join(f"\r\x1b[Kvjplint: {i}/{total} files" for i in range(1, total + 1)) + "\r\x1b[K"


@pytest.mark.cli
@pytest.mark.parametrize("args", [[], ["--fix"], ["--add-noqa"]])
def test_progress_counter_on_a_terminal_only(tmp_path: Path, args: List[str]) -> None:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(CLIP.format(comment="", trigger=TRIGGER))
    (tmp_path / "plain.py").write_text("import os\n")
    work = tmp_path / "work"
    for stderr_tty in (False, True):
        if work.exists():
            import shutil

            shutil.rmtree(work)
        work.mkdir()
        for f in tmp_path.glob("*.py"):
            (work / f.name).write_bytes(f.read_bytes())
        err = _run_on_pty(work, ["--no-cache", "-j", "1", *args, "."], stderr_tty)
        if stderr_tty:
            assert err.startswith(_counter(4)), repr(err)
        else:
            assert "vjplint: 1/4 files" not in err and "\x1b[K" not in err, repr(err)
    quiet = _run_on_pty(work, ["--no-cache", "-j", "1", "-q", *args, "."], True)
    assert "files" not in quiet  # -q: diagnostics only
