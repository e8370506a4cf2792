"""pre-commit runs vjplint, through pre-commit itself: the hooks of .pre-commit-hooks.yaml with
`pre-commit try-repo` on this checkout (HEAD plus uncommitted changes, in a hook environment that
pre-commit builds with pip), and the README's `repo: local` snippet as written.

Slow (pre-commit builds a virtual environment for the python hooks; about half a minute).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest

from tests.conftest import ROOT, RULE_FIXTURES

HAZARD = RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py"
CLEAN = "import jax\n\n\ndef f(x):\n    return jax.numpy.sin(x)\n"
PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")  # pre-commit: the test extra


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Dict[str, str]:
    """pre-commit's cache shared by the tests of this module; `vjplint` on PATH for `language:
    system`, running this checkout's code."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "vjplint").symlink_to(Path(sys.executable).with_name("vjplint"))
    out = {**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never"}
    out.pop("VJPLINT_OUTPUT_FORMAT", None)
    return out


def project(path: Path, files: Dict[str, str]) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    git(path, "add", ".")
    return path


def pre_commit(cwd: Path, env: Dict[str, str], *args: str) -> subprocess.CompletedProcess:
    assert PRE_COMMIT, "pre-commit is not installed: the test extra installs it"
    return subprocess.run([PRE_COMMIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def readme_local_hook() -> str:
    """The YAML block in the README's pre-commit item (indented under the list item)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\n( *)```yaml\n(.*?)\n\1```\n", readme[readme.index("- **pre-commit**"):], re.S)
    assert match, "no yaml block in the README's pre-commit item"
    return textwrap.dedent(match[2])


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="try-repo needs this checkout to be a git repository")
def test_try_repo_runs_the_published_hooks(tmp_path, env):
    """Both hooks in one `try-repo` (one hook environment built, not one per hook): `vjplint`
    reports, then `vjplint-fix` writes the residual-plus-None form and fails because it changed a
    file."""
    repo = project(tmp_path / "user", {"ops.py": HAZARD.read_text(encoding="utf-8"), "clean.py": CLEAN})
    proc = pre_commit(repo, env, "try-repo", str(ROOT), "--all-files")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 1, both
    hooks = re.findall(r"^(vjplint|vjplint \(fix\))\.+(\w+)$", both, re.M)
    assert hooks == [("vjplint", "Failed"), ("vjplint (fix)", "Failed")], both
    out, fixing = both.split("\nvjplint (fix)", 1)
    assert "ops.py:9:19: VJP101 [*] `lo` (position 0) is in nondiff_argnums" in out, out
    assert "Found 4 problems (2 fixable with --fix)." in out, out
    assert "clean.py" not in out.replace("- files were modified", "")

    assert "- files were modified by this hook" in fixing, fixing
    assert "@jax.custom_vjp\ndef clip_gradient(lo, hi, x):" in (repo / "ops.py").read_text(encoding="utf-8")
    assert (repo / "clean.py").read_text(encoding="utf-8") == CLEAN


def test_readme_local_hook(tmp_path, env):
    config = readme_local_hook()
    assert "repo: local" in config and "language: system" in config
    bad = project(tmp_path / "bad", {".pre-commit-config.yaml": config, "ops.py": HAZARD.read_text(encoding="utf-8")})
    proc = pre_commit(bad, env, "run", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert re.search(r"^vjplint\.+Failed$", out, re.M), out
    assert "ops.py:29:52: VJP104" in out, out

    good = project(tmp_path / "good", {".pre-commit-config.yaml": config, "clean.py": CLEAN,
                                       "stub.pyi": "def f(x: int) -> int: ...\n"})
    proc = pre_commit(good, env, "run", "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^vjplint\.+Passed$", proc.stdout, re.M), proc.stdout
