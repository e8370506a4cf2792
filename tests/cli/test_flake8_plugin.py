"""The flake8 plugin through real flake8 (the `test` extra installs it; the entry point comes with
`pip install -e .`): the same findings as vjplint, each once, with flake8's own noqa handling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from tests.conftest import ROOT, RULE_FIXTURES, run_cli

FORMAT = "%(path)s:%(row)d:%(col)d: %(code)s"
CLIP = (RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py").read_text()


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "flake8", "--format", FORMAT, *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=120)


def lines(proc: subprocess.CompletedProcess) -> List[str]:
    assert proc.stderr == "", proc.stderr
    return proc.stdout.splitlines()


def test_the_plugin_is_registered() -> None:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=60)
    assert "vjplint: 0.1.0" in proc.stdout


def test_same_findings_as_vjplint_each_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(CLIP)
    (tmp_path / "b.py").write_text(CLIP)
    (tmp_path / "plain.py").write_text("import os\n")
    proc = flake8(tmp_path, "--select", "VJP", "-j", "2", ".")
    assert proc.returncode == 1
    expected = [f"./{name}:{pos}" for name in ("a.py", "b.py")
                for pos in ("9:19: VJP101", "9:23: VJP101", "29:52: VJP104", "29:56: VJP104")]
    assert sorted(lines(proc)) == sorted(expected)  # each once, whatever the order of the files
    concise = run_cli("--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path).stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in concise[:-1]] == [["a.py:9:19:", "VJP101"], ["a.py:9:23:", "VJP101"],
                                                               ["a.py:29:52:", "VJP104"], ["a.py:29:56:", "VJP104"]]
    full = flake8(tmp_path, "--select", "VJP", "--format", "%(code)s %(text)s", "a.py").stdout.splitlines()
    assert full[0] == ("VJP101 `lo` (position 0) is in nondiff_argnums but is used as an array: `jnp.clip(g, lo, "
                       "hi)`; a traced value here raises UnexpectedTracerError under jit, vmap or grad. Pass it as "
                       "a regular argument, save it in the residuals and return None for it from bwd")


def test_flake8_does_the_noqa(tmp_path: Path) -> None:
    source = (CLIP.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa: VJP101")
              .replace("clip_gradient(lo, hi, x) * 2)", "clip_gradient(lo, hi, x) * 2)  # noqa: E501, VJP999"))
    (tmp_path / "a.py").write_text(source)
    # VJP101 silenced by its code; VJP104 not (E501 and VJP999 are other codes); no VJP901 for VJP999
    assert lines(flake8(tmp_path, "--select", "VJP", "a.py")) == ["a.py:29:52: VJP104", "a.py:29:56: VJP104"]
    # flake8's --disable-noqa shows them all: vjplint's own noqa reading is off under flake8
    assert lines(flake8(tmp_path, "--select", "VJP", "--disable-noqa", "a.py")) == [
        "a.py:9:19: VJP101", "a.py:9:23: VJP101", "a.py:29:52: VJP104", "a.py:29:56: VJP104"]
    # a bare noqa silences every code on its line, as flake8 defines it
    (tmp_path / "a.py").write_text(CLIP.replace("* 2)(-0.5, 0.5, 1.0)", "* 2)(-0.5, 0.5, 1.0)  # noqa"))
    assert lines(flake8(tmp_path, "--select", "VJP", "a.py")) == ["a.py:9:19: VJP101", "a.py:9:23: VJP101"]
    # flake8's --extend-ignore and per-file selection apply to VJP codes like any other
    assert lines(flake8(tmp_path, "--select", "VJP", "--extend-ignore", "VJP101", "--disable-noqa", "a.py")) == [
        "a.py:29:52: VJP104", "a.py:29:56: VJP104"]


def test_tool_vjplint_settings_apply(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nignore = ["VJP104"]\n')
    (tmp_path / "a.py").write_text(CLIP)
    assert lines(flake8(tmp_path, "--select", "VJP", "a.py")) == ["a.py:9:19: VJP101", "a.py:9:23: VJP101"]


@pytest.mark.unit
def test_noqa_words_are_blanked_in_comments_only() -> None:
    from vjplint.integrations.flake8 import without_noqa

    source = 'x = "# noqa: VJP101"  # NOQA: VJP101\ny = 1  # noqa\n'
    assert without_noqa(source) == 'x = "# noqa: VJP101"  # n0qa: VJP101\ny = 1  # n0qa\n'
    assert without_noqa("def f(:\n  # noqa\n") == "def f(:\n  # noqa\n"  # does not tokenize: left alone
