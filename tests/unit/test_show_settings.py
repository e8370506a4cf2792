"""`--show-settings PATH`: which configuration applies to a file and why, from the same Workspace
that linting uses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vjplint.cli.show_settings import explain
from vjplint.project.workspace import Overrides, Workspace

ROOT_TOML = '[tool.vjplint]\nselect = ["VJP"]\nextend-select = ["VJP106"]\nexclude = ["build", "generated_*"]\n'
PKG_TOML = ('[tool.vjplint]\nextend = "../pyproject.toml"\nignore = ["VJP308"]\nextend-select = ["VJP107"]\n'
            'per-file-ignores = { "tests/*" = ["VJP104", "VJP2"], "docs/*" = ["VJP101"] }\n'
            'array-names = ["weights"]\n')


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "tests").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(ROOT_TOML)
    (tmp_path / "pkg" / "pyproject.toml").write_text(PKG_TOML)
    (tmp_path / "pkg" / "tests" / "test_a.py").write_text("")
    (tmp_path / "pkg" / "generated_ops.py").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "b.py").write_text("")
    return tmp_path


def test_the_chain_the_origin_of_each_key_and_the_codes(tree: Path) -> None:
    pkg = str(tree / "pkg" / "pyproject.toml")
    e = explain(str(tree / "pkg" / "tests" / "test_a.py"), Workspace(Overrides(ignore=("VJP401",))))
    assert (e.configuration, e.how, e.chain) == (pkg, "nearest", [pkg, str(tree / "pyproject.toml")])
    assert (e.root, e.relative_path) == (str(tree / "pkg"), os.path.join("tests", "test_a.py"))
    assert e.settings["select"] == ["VJP"] and e.origin["select"] == [str(tree / "pyproject.toml")]
    assert e.settings["ignore"] == ["VJP308"] and e.origin["ignore"] == [pkg]
    # extend-select adds up along the chain: both files are named, the base first
    assert e.settings["extend-select"] == ["VJP106", "VJP107"]
    assert e.origin["extend-select"] == [str(tree / "pyproject.toml"), pkg]
    assert e.settings["array-names"] == ["weights"] and "target" not in e.origin
    assert e.command_line == {"ignore": ["VJP401"]}
    assert e.per_file_ignores == [{"pattern": "tests/*", "codes": ["VJP104", "VJP2"]}]
    assert e.off_for_file == ["VJP104", "VJP201", "VJP202", "VJP203"]
    assert {"VJP101", "VJP106", "VJP107", "VJP900", "VJP901"} <= set(e.enabled)
    assert not {"VJP104", "VJP201", "VJP308", "VJP401"} & set(e.enabled)
    assert e.excluded_by is None


def test_the_codes_are_what_linting_uses(tree: Path) -> None:
    """The enabled codes are the engine's: a file that fires VJP104 and VJP101 under pkg/tests/
    reports VJP101 only, as explain() says."""
    from vjplint.lint.engine import lint_source

    path = tree / "pkg" / "tests" / "test_a.py"
    workspace = Workspace()
    e = explain(str(path), workspace)
    source = (Path(__file__).parents[2] / "fixtures/rules/VJP101/fire_clip_gradient.py").read_text()
    found = {d.code for d in lint_source(str(path), source, workspace.settings_for(str(path))).diagnostics}
    assert found == {"VJP101"} and "VJP101" in e.enabled and "VJP104" in e.off_for_file


def test_defaults_config_flag_and_exclude(tree: Path) -> None:
    e = explain(str(tree / "other" / "b.py"), Workspace())
    assert (e.configuration, e.how) == (str(tree / "pyproject.toml"), "nearest")
    e = explain(str(tree / "pkg" / "generated_ops.py"), Workspace())
    assert e.excluded_by == "generated_*"
    e = explain(str(tree / "other" / "b.py"), Workspace(config_file=str(tree / "pkg" / "pyproject.toml")))
    assert (e.configuration, e.how) == (str(tree / "pkg" / "pyproject.toml"), "--config")
    (tree / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    e = explain(str(tree / "other" / "b.py"), Workspace())
    assert (e.configuration, e.how, e.chain, e.origin) == (None, "defaults", [], {})
    assert "VJP106" not in e.enabled and "VJP101" in e.enabled


@pytest.mark.cli
def test_cli_text_and_json(tree: Path) -> None:
    proc = run_cli("--show-settings", "pkg/tests/test_a.py", "--ignore", "VJP401", cwd=tree)
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout.splitlines()
    assert out[:4] == [
        "Settings for pkg/tests/test_a.py",
        "  configuration: pkg/pyproject.toml (the nearest pyproject.toml with [tool.vjplint], searching upwards "
        "from the file)",
        "  extends: pkg/pyproject.toml -> pyproject.toml",
        f"  patterns match paths relative to: pkg (here: {os.path.join('tests', 'test_a.py')})",
    ]
    assert '  select = ["VJP"]  (from pyproject.toml)' in out
    assert '  extend-select = ["VJP106", "VJP107"]  (from pyproject.toml, pkg/pyproject.toml)' in out
    assert '  target = "current"  (default)' in out
    assert "  command line: --ignore VJP401" in out
    assert '  per-file-ignores matching this file: "tests/*" = ["VJP104", "VJP2"]' in out
    assert "  excluded: no" in out
    assert out[-1] == "  turned off for this file by per-file-ignores: VJP104, VJP201, VJP202, VJP203"
    assert out[-2].startswith("  enabled rules (") and "VJP101, VJP102, VJP103, VJP105, VJP106, VJP107" in out[-2]
    data = json.loads(run_cli("--show-settings", "pkg/tests/test_a.py", "--output-format", "json", cwd=tree).stdout)
    assert data["configuration"] == str(tree / "pkg" / "pyproject.toml")
    assert data["set_by"]["ignore"] == [str(tree / "pkg" / "pyproject.toml")]
    assert data["disabled_for_this_file"] == ["VJP104", "VJP201", "VJP202", "VJP203"]


@pytest.mark.cli
def test_cli_usage_errors(tree: Path) -> None:
    for args, message in ((["--show-settings", "nope.py"], "--show-settings nope.py: no such file or directory"),
                          (["--show-settings", "pkg", "other"], "--show-settings takes one PATH and no other paths, "
                                                                "--fix, --diff or --add-noqa"),
                          (["--show-settings", "pkg", "--output-format", "sarif"],
                           "--show-settings prints text or json, not 'sarif'")):
        proc = run_cli(*args, cwd=tree)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"vjplint: error: {message}\n")
