"""Every command in README.md and docs/*.md runs as written, and shown output is real.

Blocks tagged `sh`/`bash` run with bash (each must exit 0); `console` blocks are `$ command`
lines followed by what the command prints, stdout and stderr merged (`...` stands for any text,
runs of spaces and tabs compare equal, pip's `WARNING:`/`[notice]` lines about the machine's
package index set-up are dropped; the exit code must be below 2). They run in document order, one
file at a time, in a copy of this checkout, the way a new user types them: `python3` is the
system's, `vjplint` is this environment's. `yaml`, `toml` and `json` blocks must parse, and a
`[tool.vjplint]` table must load. A block preceded by `<!-- docs-test: skip (reason) -->` is
not run, and the skip, with its reason, is reported.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from tests.conftest import JAX_ENV, ROOT, pythonpath

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("sh", "bash", "console")
PARSE = ("yaml", "toml", "json")
FENCE = re.compile(r"^( *)```(\S*)\s*$")
SKIP = re.compile(r"<!-- docs-test: skip \((.+)\) -->")
PIP_NOISE = re.compile(r"(WARNING: |\[notice\] )")  # pip on a machine with its own index configuration
IGNORED = shutil.ignore_patterns(".git", ".venv", ".ci-venv", "__pycache__", ".pytest_cache", ".hypothesis",
                                 ".ruff_cache", ".vjplint_cache", "*.egg-info", "dist", "build")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    skip: Optional[str]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> List[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: List[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, lang = len(match[1]), match[2]
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == " " * indent + "```")
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.search(before)
        body = "\n".join(line[indent:] for line in lines[i + 1:end])
        out.append(Block(path, i + 1, lang, body, skip[1] if skip else None))
        i = end + 1
    return out


ALL = [b for path in DOCS for b in blocks(path)]


def matches(expected: str, actual: str) -> bool:
    """`...` is any text; whitespace runs are one space; leading and trailing whitespace is ignored."""
    def norm(text: str) -> str:
        return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.strip("\n").splitlines())
    pattern = ".*?".join(re.escape(part) for part in norm(expected).split("..."))
    return re.fullmatch(pattern, norm(actual), re.S) is not None


def console(text: str) -> List[tuple]:
    """[(command, expected output)] of a console block."""
    steps: List[list] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append([line[2:], []])
        else:
            assert steps, f"console output before any `$ ` command: {line!r}"
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in steps]


@pytest.fixture(scope="module")
def user_env(tmp_path_factory) -> Dict[str, str]:
    """A new user's shell: the system's python3 and pip, and vjplint on PATH."""
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "vjplint").symlink_to(Path(sys.executable).with_name("vjplint"))
    ours = {str(Path(sys.executable).parent), os.environ.get("VIRTUAL_ENV", "") + "/bin"}
    path = [str(bindir)] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p not in ours]
    # Without PYTHONDONTWRITEBYTECODE (a new user's shell has none), Python writes the bytecode of
    # what a command imports, as on a user's machine. pip does not byte-compile what it installs
    # (PIP_COMPILE=0, i.e. `--no-compile`): compiling all of JAX and SciPy took half of the
    # README's `[lsp,verify]` install (22 s against 12 s), and it proves nothing here (pip only warns when
    # a file does not compile); the commands still install into fresh venvs as written.
    drop = ("VIRTUAL_ENV", "VJPLINT_OUTPUT_FORMAT", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PATH=os.pathsep.join(path), PYTHONPATH=pythonpath(ROOT), NO_COLOR="1", PIP_COMPILE="0", **JAX_ENV)
    return env


def run(command: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_commands_are_in_runnable_blocks():
    """An untagged block with `$ ` prompts would escape this test."""
    hidden = [b.id for b in ALL if b.lang in ("", "text") and any(line.startswith("$ ") for line in b.text.splitlines())]
    assert hidden == []


def test_no_install_from_pypi():
    """vjplint is not on PyPI: no unskipped block may install it from there."""
    offenders = [b.id for b in ALL if b.skip is None and re.search(r"pip install (-\S+ )*['\"]?vjplint\b(?! @)", b.text)]
    assert offenders == []


@pytest.mark.parametrize("block", [b for b in ALL if b.skip], ids=lambda b: b.id)
def test_skipped_blocks_say_why(block: Block):
    pytest.skip(f"{block.id} ({block.lang}) not run: {block.skip}")


@pytest.mark.parametrize("block", [b for b in ALL if b.lang in PARSE and not b.skip], ids=lambda b: b.id)
def test_config_blocks_parse(block: Block, tmp_path: Path):
    if block.lang == "json":
        json.loads(block.text)
    elif block.lang == "yaml":
        import yaml  # pre-commit, in the test extra, depends on PyYAML
        assert yaml.safe_load(block.text)
    else:
        tomllib = __import__("tomllib") if sys.version_info >= (3, 11) else __import__("tomli")
        data = tomllib.loads(block.text)
        if "tool" in data and "vjplint" in data["tool"]:
            from vjplint.settings.config import load_config

            (tmp_path / "pyproject.toml").write_text(block.text, encoding="utf-8")
            load_config(tmp_path / "pyproject.toml")  # unknown keys or bad values raise


@pytest.mark.cli
@pytest.mark.parametrize("doc", [p for p in DOCS if any(b.lang in RUN and not b.skip for b in blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_blocks_run_as_written(doc: Path, tmp_path: Path, user_env: Dict[str, str]):
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=IGNORED, symlinks=True)
    failures: List[str] = []
    for block in blocks(doc):
        if block.skip or block.lang not in RUN:
            continue
        if block.lang != "console":
            proc = run(block.text, checkout, user_env)
            if proc.returncode != 0:
                failures.append(f"{block.id}: exit {proc.returncode}\n{block.text}\n{proc.stdout}{proc.stderr}")
            continue
        for command, expected in console(block.text):
            proc = run(command + " 2>&1", checkout, user_env)
            printed = "\n".join(line for line in proc.stdout.splitlines() if not PIP_NOISE.match(line))
            if proc.returncode >= 2 or not matches(expected, printed):
                failures.append(f"{block.id}: `{command}` exit {proc.returncode}; shown:\n{expected}\n"
                                f"--- printed:\n{proc.stdout}{proc.stderr}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.cli
def test_github_actions_recipe(tmp_path: Path, user_env: Dict[str, str]):
    """The workflow parses, installs vjplint from a pinned git URL (a repository variable, not
    PyPI), and its vjplint steps run as written in a clean repository."""
    import yaml
    doc = ROOT / "docs" / "editors-and-ci.md"
    [workflow] = [b for b in blocks(doc) if b.lang == "yaml" and "jobs:" in b.text]
    steps = yaml.safe_load(workflow.text)["jobs"]["vjplint"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[0] == 'pip install "vjplint @ ${{ vars.VJPLINT_GIT }}"'
    (tmp_path / "ops.py").write_text("import jax\n\n\ndef f(x):\n    return jax.numpy.sin(x)\n", encoding="utf-8")
    for command in runs[1:]:
        proc = run(command, tmp_path, user_env)
        assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
    sarif = json.loads((tmp_path / "vjplint.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []


def test_matches_elisions():
    assert matches("a\n...\nFound 4 problems.", "a\nb\nc\nFound 4 problems.\n")
    assert matches("x `lo` ...; rest", "x `lo` is in nondiff_argnums; rest")
    assert matches("13\tVJP101", "   13  VJP101")
    assert not matches("Found 2 problems", "Found 4 problems")
    assert not matches("a\n...\nb", "a\nc")


# -- counts the prose states ------------------------------------------------------------------------
QUICK_START = re.compile(r"It reports (\d+)\s+problems in (\d+) files .*?\s(\d+) of them fixable with `--fix` and "
                         r"(\d+) more with `--unsafe-fixes`", re.DOTALL)
TEST_COUNT = re.compile(r"It has about ([\d,]+) tests")


@pytest.mark.cli
def test_quick_start_counts_are_what_the_command_prints():
    """Issue 37: the quick start said 20 problems in 9 files where the command printed 21 in 10."""
    from tests.conftest import run_cli

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = QUICK_START.search(readme)
    assert found, "the quick-start sentence with its counts"
    problems, files, fixable, hidden = map(int, found.groups())
    proc = run_cli("--no-cache", "--output-format", "concise", "fixtures/rules/VJP101/")
    reported = {line.split(":", 1)[0] for line in proc.stdout.splitlines() if ": VJP" in line}
    assert proc.returncode == 1 and (len(reported), proc.stdout.splitlines()[-1]) == (
        files, f"Found {problems} problems ({fixable} fixable with --fix). "
               f"({hidden} hidden fixes can be enabled with --unsafe-fixes.)")


README_TEST_COMMAND = re.compile(r'pip install -q -e "\.\[test\]" && \.venv/bin/python -m pytest ([^\n]*)')
CI_TEST_COMMAND = re.compile(r"^python -m pytest ([^\n]*?) \|\| status=\$\?$", re.M)


def test_ci_runs_the_readme_test_command():
    """.ci/run runs the README's test command, with the same pytest arguments, and the `test` extra
    installs the plugin those arguments need (`-n` is pytest-xdist's)."""
    readme = README_TEST_COMMAND.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    ci = CI_TEST_COMMAND.findall((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert len(readme) == 1 and ci == readme, (readme, ci)
    args = readme[0].split()
    if "-n" in args:
        test_extra = re.search(r"^test = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
                               re.M | re.S).group(1)
        assert '"pytest-xdist>=' in test_extra


def test_readme_test_count_is_about_right(request: pytest.FixtureRequest):
    """The README's "about N tests" is within 5% of what this run collected, when it collected the
    whole suite (a run of some files cannot tell: skipped, saying so)."""
    claimed = int(TEST_COUNT.search((ROOT / "README.md").read_text(encoding="utf-8")).group(1).replace(",", ""))
    args = [a for a in request.config.args if a not in ("tests", "tests/", str(ROOT / "tests"))]
    if args or request.config.getoption("keyword"):
        pytest.skip("only a run of the whole suite counts its tests")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    deselected = len(reporter.stats.get("deselected", [])) if reporter is not None else 0
    collected = request.session.testscollected + deselected  # `-m unit` deselects the other layers
    assert abs(collected - claimed) <= 0.05 * collected, f"README says about {claimed} tests; {collected} collected"
