"""A merged code keeps working as a redirect (vjplint.settings.redirects, ruff's redirect table):
wherever a user writes the old code (select, ignore, extend-select, per-file-ignores, on the
command line and in pyproject.toml, `# noqa`, `vjplint rule`) it means the code it was merged into.

No code is merged today, so the real CLI runs in a subprocess with one entry installed in the
table: the unused code VJP399 merged into VJP334; without the entry the same commands fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, ROOT, pythonpath

# Layer cli: the real command line, in a subprocess.

FIXTURE = FIXTURES / "rules" / "VJP334" / "fire_tangents_swapped.py"
REPORT = ":16:5: VJP334 jvp rule `scaled_sin_jvp`"
INSTALL = "import vjplint.settings.redirects as r; r.REDIRECTS['VJP399'] = 'VJP334'; "


def _vjplint(*args: str, cwd: Path = ROOT, merged: bool = True) -> subprocess.CompletedProcess:
    code = ("import sys; " + (INSTALL if merged else "") +
            "from vjplint.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_old_code_selects_ignores_and_extends_on_the_command_line() -> None:
    selected = _vjplint("--no-cache", "--select", "VJP399", str(FIXTURE))
    assert selected.returncode == 1, selected.stdout + selected.stderr
    assert REPORT in selected.stdout and "Found 1 problem" in selected.stdout
    extended = _vjplint("--no-cache", "--select", "VJP1", "--extend-select", "VJP399", str(FIXTURE))
    assert REPORT in extended.stdout
    ignored = _vjplint("--no-cache", "--select", "VJP334", "--ignore", "VJP399", str(FIXTURE))
    assert ignored.returncode == 0 and "VJP334" not in ignored.stdout, ignored.stdout + ignored.stderr


def test_without_the_table_the_old_code_is_unknown() -> None:
    refused = _vjplint("--no-cache", "--select", "VJP399", str(FIXTURE), merged=False)
    assert refused.returncode == 2
    assert "unknown rule code or prefix 'VJP399'" in refused.stderr
    assert _vjplint("rule", "VJP399", merged=False).returncode == 2


def test_the_old_code_in_pyproject_select_and_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["VJP399"]\n', encoding="utf-8")
    found = _vjplint("--no-cache", "m.py", cwd=tmp_path)
    assert "m.py" + REPORT in found.stdout, found.stdout + found.stderr
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vjplint]\nselect = ["VJP334"]\n[tool.vjplint.per-file-ignores]\n"m.py" = ["VJP399"]\n', encoding="utf-8")
    quiet = _vjplint("--no-cache", "m.py", cwd=tmp_path)
    assert quiet.returncode == 0 and "VJP334" not in quiet.stdout, quiet.stdout + quiet.stderr


def test_noqa_with_the_old_code_suppresses_the_new_one_and_is_not_unknown(tmp_path: Path) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    assert lines[15] == "    y_dot, x_dot = tangents"
    lines[15] += "  # noqa: VJP399"
    (tmp_path / "m.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    quiet = _vjplint("--no-cache", "--select", "VJP334,VJP901", "m.py", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "All checks passed!", quiet.stdout + quiet.stderr
    unmerged = _vjplint("--no-cache", "--select", "VJP334,VJP901", "m.py", cwd=tmp_path, merged=False)
    assert "VJP334" in unmerged.stdout and "unknown rule code VJP399" in unmerged.stdout


def test_vjplint_rule_names_the_merge_then_shows_the_new_page() -> None:
    shown = _vjplint("rule", "VJP399")
    assert shown.returncode == 0, shown.stderr
    first, _, rest = shown.stdout.partition("\n\n")
    assert first.startswith("VJP399 has been merged into VJP334")
    assert rest.startswith("# rule-order-by-name (VJP334)")
    listed = _vjplint("rule", "--all")
    assert "# Codes that moved\n\n- VJP399 has been merged into VJP334" in listed.stdout
    as_json = json.loads(_vjplint("rule", "VJP399", "--output-format", "json").stdout)
    assert (as_json["code"], as_json["name"], as_json["merged_from"]) == ("VJP334", "rule-order-by-name", "VJP399")
    every = json.loads(_vjplint("rule", "--all", "--output-format", "json").stdout)
    assert every[-1] == {"code": "VJP399", "merged_into": "VJP334"}
