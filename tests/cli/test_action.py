"""The composite GitHub Action (action.yml): it parses, and its shell steps run as a runner runs
them (`bash --noprofile --norc -eo pipefail`, inputs through `${{ }}` expressions, `$GITHUB_OUTPUT`)
against a copy of this checkout: vjplint is installed from the action's own directory into a fresh
virtual environment, lints a repository into SARIF (valid against the official schema), and the
`if:` conditions decide the upload and the failure as the inputs say."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT, RULE_FIXTURES

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: List[Dict[str, Any]] = ACTION["runs"]["steps"]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
IGNORED = shutil.ignore_patterns(".git", ".venv", ".ci-venv", "__pycache__", ".pytest_cache", ".hypothesis",
                                 ".ruff_cache", ".vjplint_cache", "*.egg-info", "dist", "build")


class Runner:
    """Just enough of the Actions runner for this action: contexts, expressions, outputs."""

    def __init__(self, inputs: Dict[str, str], action_path: Path, workspace: Path, path: str) -> None:
        self.inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        self.inputs.update(inputs)
        self.action_path, self.workspace, self.path = action_path, workspace, path
        self.outputs: Dict[str, Dict[str, str]] = {}

    def value(self, ref: str) -> str:
        if ref == "github.action_path":
            return str(self.action_path)
        if ref.startswith("inputs."):
            return self.inputs[ref[len("inputs."):]]
        match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", ref)
        assert match, f"unsupported expression {ref!r}"
        return self.outputs.get(match[1], {}).get(match[2], "")

    def expand(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m[1]), text)

    def condition(self, step: Dict[str, Any]) -> bool:
        """`&&` of always() and `ref == 'x'` / `ref != 'x'` terms: what this action uses."""
        text = step.get("if", "success()")
        text = EXPR.fullmatch(text)[1] if EXPR.fullmatch(text) else text
        result = True
        for term in (t.strip() for t in text.split("&&")):
            if term in ("always()", "success()"):
                continue
            match = re.fullmatch(r"([\w.-]+) (==|!=) '([^']*)'", term)
            assert match, f"unsupported condition {term!r}"
            equal = self.value(match[1]) == match[3]
            result = result and (equal if match[2] == "==" else not equal)
        return result

    def run(self, step: Dict[str, Any]) -> subprocess.CompletedProcess:
        assert step["shell"] == "bash"
        script = self.workspace.parent / "step.sh"
        script.write_text(self.expand(step["run"]), encoding="utf-8")
        output = self.workspace.parent / "github_output"
        output.write_text("")
        env = {**os.environ, "PATH": self.path, "GITHUB_OUTPUT": str(output),
               **{k: self.expand(str(v)) for k, v in step.get("env", {}).items()}}
        env.pop("PYTHONPATH", None)  # the installed copy, not this checkout
        env.pop("VJPLINT_OUTPUT_FORMAT", None)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                              env=env, capture_output=True, text=True, timeout=600)
        if "id" in step:
            self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
        return proc


def step(name: str) -> Dict[str, Any]:
    [found] = [s for s in STEPS if s["name"] == name]
    return found


def test_the_action_is_composite_with_its_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "args", "fail"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["paths"]["default"] == "." and ACTION["inputs"]["fail"]["default"] == "true"
    assert [s["name"] for s in STEPS] == ["Install vjplint", "Run vjplint", "Upload SARIF to code scanning",
                                         "Fail when problems remain"]
    assert step("Install vjplint")["run"] == 'python -m pip install "${{ github.action_path }}"'
    upload = step("Upload SARIF to code scanning")
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert upload["with"] == {"sarif_file": "${{ inputs.sarif-file }}", "category": "vjplint"}
    # inputs never appear inside a script, only in `env:` (a crafted input cannot inject shell)
    assert all("inputs." not in s.get("run", "") for s in STEPS)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """A copy of this checkout as the action's directory, and a fresh virtual environment whose
    `python` is first on PATH (as actions/setup-python leaves it), with the install step run in it."""
    base = tmp_path_factory.mktemp("action")
    action_path = base / "vjplint-action"
    shutil.copytree(ROOT, action_path, ignore=IGNORED, symlinks=True)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    path = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    workspace = base / "repo"
    workspace.mkdir()
    proc = Runner({}, action_path, workspace, path).run(step("Install vjplint"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import vjplint; print(vjplint.__file__)"],
                           capture_output=True, text=True, env={"PATH": path}, cwd=base, timeout=60)
    assert where.stdout.startswith(str(venv)), where  # a real (non-editable) install from the action's copy
    return {"action_path": action_path, "path": Path(path.split(os.pathsep)[0]), "base": base}


def _repo(installed: Dict[str, Path], name: str) -> Path:
    repo = installed["base"] / name
    (repo / "src").mkdir(parents=True)
    shutil.copy(RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py", repo / "src" / "ops.py")
    (repo / "src" / "plain.py").write_text("import jax\n")
    return repo


def _lint(installed: Dict[str, Path], repo: Path, inputs: Dict[str, str]) -> Runner:
    path = f"{installed['path']}{os.pathsep}{os.environ['PATH']}"
    runner = Runner(inputs, installed["action_path"], repo, path)
    runner.proc = runner.run(step("Run vjplint"))  # type: ignore[attr-defined]
    return runner


def _results(repo: Path, name: str = "vjplint.sarif") -> List[str]:
    sarif = json.loads((repo / name).read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validate(sarif, schema)
    return [f"{r['locations'][0]['physicalLocation']['artifactLocation']['uri']}:{r['ruleId']}"
            for r in sarif["runs"][0]["results"]]


def test_problems_are_uploaded_and_fail_the_job(installed: Dict[str, Path]) -> None:
    repo = _repo(installed, "defaults")
    runner = _lint(installed, repo, {})
    assert runner.proc.returncode == 0, runner.proc.stderr  # the SARIF step itself passes
    assert runner.outputs["lint"] == {"exit-code": "1", "report": "vjplint.sarif"}
    assert _results(repo) == ["src/ops.py:VJP101"] * 2 + ["src/ops.py:VJP104"] * 2
    assert runner.condition(step("Upload SARIF to code scanning"))
    fail = step("Fail when problems remain")
    assert runner.condition(fail)
    proc = runner.run(fail)
    assert proc.returncode == 1
    assert proc.stdout == ("::error title=vjplint::vjplint found problems; they are in vjplint.sarif and in the "
                           "code scanning alerts\n")


def test_inputs_paths_args_and_fail(installed: Dict[str, Path]) -> None:
    repo = _repo(installed, "inputs")
    runner = _lint(installed, repo, {"paths": "src/ops.py src/plain.py", "args": "--select VJP104",
                                     "fail": "false", "sarif-file": "out/report.sarif"})
    assert runner.proc.returncode == 0 and runner.outputs["lint"]["exit-code"] == "1"
    assert _results(repo, "out/report.sarif") == ["src/ops.py:VJP104"] * 2  # out/ was made for it
    assert runner.condition(step("Upload SARIF to code scanning"))
    assert not runner.condition(step("Fail when problems remain"))  # fail: "false"
    assert not Runner({"upload": "false"}, installed["action_path"], repo, "").condition(
        step("Upload SARIF to code scanning"))


def test_a_clean_repository_passes(installed: Dict[str, Path]) -> None:
    repo = _repo(installed, "clean")
    (repo / "src" / "ops.py").unlink()
    runner = _lint(installed, repo, {})
    assert runner.proc.returncode == 0 and runner.outputs["lint"] == {"exit-code": "0", "report": "vjplint.sarif"}
    assert _results(repo) == []
    assert runner.condition(step("Upload SARIF to code scanning"))
    assert not runner.condition(step("Fail when problems remain"))


def test_a_usage_error_fails_the_step_and_nothing_is_uploaded(installed: Dict[str, Path]) -> None:
    repo = _repo(installed, "usage")
    runner = _lint(installed, repo, {"args": "--select NOPE"})
    assert runner.proc.returncode == 2
    assert "vjplint: error: --select: unknown rule code or prefix 'NOPE'" in runner.proc.stderr
    assert "::error title=vjplint::vjplint exited with status 2" in runner.proc.stdout
    assert runner.outputs["lint"] == {"exit-code": "2"}
    assert not runner.condition(step("Upload SARIF to code scanning"))
