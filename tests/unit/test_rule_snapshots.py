"""Every rule's output in one shape: a snapshot per rule, `tests/snapshots/<CODE>.md`.

A rule's cases are its fixtures (`fixtures/rules/<CODE>/*.py`) and its own VALID/INVALID
examples, each linted in-process with `select = [CODE]`. For each case the snapshot records every
diagnostic (code, start row:col-end row:col, severity, message, the fix's applicability and
message) and, where a fix is offered, the unified diff `vjplint --diff --unsafe-fixes` would print
and what is left after fixing. A silent case reads "no diagnostics", so a new false positive
shows in the diff. Rewrite the snapshots with `VJPLINT_UPDATE_SNAPSHOTS=1 python -m pytest
tests/unit/test_rule_snapshots.py` (or `--update-snapshots`) and review the diff before committing.

Alongside, the properties that hold whatever the snapshot says: INVALID examples and fire_*
fixtures fire their rule (fixtures at the places `expected.txt` marks), VALID examples and
silent_* fixtures do not, and silent_* fixtures stay silent under the default rule set.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

from tests.conftest import ROOT, RULE_FIXTURES, check_each
from vjplint.settings.config import Config
from vjplint.diagnostics import Diagnostic
from vjplint.lint.engine import lint_source
from vjplint.fixes.apply import fix_text
from vjplint.syntax.positions import lines_with_endings
from vjplint.rules.registry import all_rules

SNAPSHOTS = ROOT / "tests" / "snapshots"
FENCE = "````"  # four backticks: a fixture may hold a ``` of its own
MARK = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<row>\d+):(?P<col>\d+): (?P<code>VJP\d+)\b")


@dataclass(frozen=True)
class Case:
    code: str
    label: str  # the heading: a fixture's path, or e.g. `VJP101.INVALID[0]`
    filename: str  # what the linter and the diff header are told
    text: str
    fires: bool  # fire_* fixtures and INVALID examples must fire the rule
    example: bool  # examples live in the rule class: the snapshot shows their source


def rule_cases(code: str) -> List[Case]:
    cases = []
    directory = RULE_FIXTURES / code
    for path in sorted(directory.glob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        cases.append(Case(code, relative, relative, path.read_text(encoding="utf-8"),
                          path.name.startswith("fire_"), False))
    rule = all_rules()[code]
    for kind, snippets in (("INVALID", rule.INVALID), ("VALID", rule.VALID)):
        for i, snippet in enumerate(snippets):
            # A runtime rule's INVALID examples fire under `vjplint check-grads`, never when linted.
            fires = kind == "INVALID" and not rule.RUNTIME
            cases.append(Case(code, f"{code}.{kind}[{i}]", "example.py", snippet, fires, True))
    return cases


def _fix_of(d: Diagnostic) -> Optional[Tuple[str, str]]:
    """(applicability, message) of a diagnostic's fix, if it offers one."""
    return (d.fix.applicability.value, d.fix.message) if d.fix is not None else None


def unified_diff(name: str, old: str, new: str) -> str:
    """What `vjplint --diff` prints for one file: a unified diff over Python's lines."""
    out = []
    for line in difflib.unified_diff(lines_with_endings(old), lines_with_endings(new), fromfile=name, tofile=name):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def render_diagnostics(diagnostics: List[Diagnostic]) -> List[str]:
    if not diagnostics:
        return ["no diagnostics"]
    lines = []
    for d in diagnostics:
        start, end = d.location, d.end_location
        message = d.message.replace("\n", "\n  ")
        lines.append(f"- {d.code} {start.row}:{start.column}-{end.row}:{end.column} {d.severity.value}: {message}")
        fix = _fix_of(d)
        if fix is not None:
            lines.append(f"  fix ({fix[0]}): {fix[1]}")
    return lines


@lru_cache(maxsize=None)
def lint_case(case: Case) -> Tuple[Diagnostic, ...]:
    return tuple(lint_source(case.filename, case.text, Config(select=(case.code,))).diagnostics)


def render_case(case: Case) -> str:
    config = Config(select=(case.code,))
    diagnostics = list(lint_case(case))
    out = [f"## {case.label}", ""]
    if case.example:
        out += [f"{FENCE}python", case.text.rstrip("\n"), FENCE, ""]
    out += render_diagnostics(diagnostics)
    if any(_fix_of(d) is not None for d in diagnostics):
        result = fix_text(case.filename, case.text, config, unsafe=True)
        out.append("")
        if result.text == case.text:
            out.append("`--fix --unsafe-fixes` leaves the text as it is.")
        else:
            diff = unified_diff(case.filename, case.text, result.text).rstrip("\n")
            out += ["`--fix --unsafe-fixes`:", "", f"{FENCE}diff", diff, FENCE, "", "Left after fixing:", ""]
            out += render_diagnostics(result.remaining)
        if result.errors:
            out += ["", "Fix errors:", ""] + [f"- {e}" for e in result.errors]
    return "\n".join(out) + "\n"


def render_rule(code: str) -> str:
    rule = all_rules()[code]
    head = [f"# {code} {rule.NAME}", "",
            "<!-- Generated by tests/unit/test_rule_snapshots.py: do not edit. Regenerate with",
            "     VJPLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/unit/test_rule_snapshots.py -->", "",
            f"Each case is linted with `select = [\"{code}\"]`; rows and columns are 1-based, the end",
            "exclusive. Fixable cases show the diff `vjplint --diff --unsafe-fixes` prints.", ""]
    if rule.RUNTIME:
        head += ["A runtime rule: `vjplint check-grads` reports it by running the code (its cases are",
                 "fixtures/check_grads/); linting never does, so every case here reads \"no diagnostics\".", ""]
    return "\n".join(head) + "\n" + "\n".join(render_case(case) for case in rule_cases(code))


def _updating(config: pytest.Config) -> bool:
    return bool(os.environ.get("VJPLINT_UPDATE_SNAPSHOTS")) or bool(config.getoption("--update-snapshots"))


# -- the snapshots -------------------------------------------------------------------------------
@pytest.mark.parametrize("code", list(all_rules()))
def test_rule_output_matches_its_snapshot(code: str, request: pytest.FixtureRequest) -> None:
    path = SNAPSHOTS / f"{code}.md"
    fresh = render_rule(code)
    if _updating(request.config):
        SNAPSHOTS.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != fresh:
            path.write_text(fresh, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing; create it with VJPLINT_UPDATE_SNAPSHOTS=1", pytrace=False)
    stored = path.read_text(encoding="utf-8")
    if stored != fresh:
        diff = "".join(difflib.unified_diff(stored.splitlines(keepends=True), fresh.splitlines(keepends=True),
                                            fromfile=f"{path.relative_to(ROOT)} (stored)", tofile="now"))
        pytest.fail(f"{code}'s output changed (VJPLINT_UPDATE_SNAPSHOTS=1 rewrites the snapshot):\n{diff}",
                    pytrace=False)


def test_every_snapshot_belongs_to_a_rule() -> None:
    stale = sorted(p.name for p in SNAPSHOTS.glob("*.md") if p.stem not in all_rules())
    assert not stale, f"snapshots of rules that do not exist: {stale}"


# -- properties -------------------------------------------------------------------------------------
def test_every_rule_has_examples_and_fixtures() -> None:
    for code, rule in all_rules().items():
        assert rule.INVALID and rule.VALID, f"{code} needs VALID and INVALID examples"
        if rule.RUNTIME:  # its fixtures are fixtures/check_grads/ (tests/jax/test_check_grads.py)
            assert not (RULE_FIXTURES / code).exists(), f"{code} is a runtime rule: linting has nothing to fixture"
            continue
        directory = RULE_FIXTURES / code
        fire, silent = list(directory.glob("fire_*.py")), list(directory.glob("silent_*.py"))
        assert len(fire) >= 3 and len(silent) >= 3, f"{code} needs at least 3 firing and 3 silent fixtures"
        others = sorted(p.name for p in directory.glob("*.py") if p not in fire and p not in silent)
        assert not others, f"{code}: fixtures are fire_*.py or silent_*.py, not {others}"
        fire_paths = {p.relative_to(ROOT).as_posix() for p in fire}
        assert set(marked_places(code)) == fire_paths, f"{code}: expected.txt must mark every fire_* fixture, only them"


@lru_cache(maxsize=None)
def marked_places(code: str) -> Dict[str, Set[Tuple[int, int]]]:
    """Where `expected.txt` (the CLI's concise output, checked by test_rule_fixtures) says the
    rule fires, per fixture."""
    places: Dict[str, Set[Tuple[int, int]]] = {}
    for line in (RULE_FIXTURES / code / "expected.txt").read_text(encoding="utf-8").splitlines():
        match = MARK.match(line)
        if match and match["code"] == code:
            places.setdefault(match["path"], set()).add((int(match["row"]), int(match["col"])))
    return places


ALL_CASES = [case for code in all_rules() for case in rule_cases(code)]


def test_case_fires_exactly_where_marked_or_stays_silent() -> None:
    """Every rule's every case (one test over them all; each case that fails is named)."""
    check_each(ALL_CASES, _fires_exactly_where_marked_or_stays_silent,
               lambda c: f"{c.code}:{c.label.rsplit('/', 1)[-1]}", least=700)


def _fires_exactly_where_marked_or_stays_silent(case: Case) -> None:
    diagnostics = lint_case(case)
    assert {d.code for d in diagnostics} <= {case.code}, render_diagnostics(list(diagnostics))
    found = {(d.location.row, d.location.column) for d in diagnostics}
    if not case.fires:
        assert not found, f"{case.label} must stay silent: {render_diagnostics(list(diagnostics))}"
    elif case.example:
        assert found, f"{case.label} must fire {case.code}"
    else:
        marked = marked_places(case.code).get(case.label)
        assert marked, f"{case.label} fires nowhere in expected.txt"
        assert found == marked, f"{case.label}: {case.code} at {sorted(found)}, expected.txt marks {sorted(marked)}"


SILENT = sorted(RULE_FIXTURES.glob("*/silent_*.py"))


def _silent_for_every_default_rule(path: Path) -> None:
    diagnostics = lint_source(path.relative_to(ROOT).as_posix(), path.read_bytes(), Config()).diagnostics
    assert not diagnostics, render_diagnostics(diagnostics)


def test_silent_fixture_is_silent_for_every_default_rule() -> None:
    """Every silent_* fixture (one test over them all; each fixture that fires is named)."""
    check_each(SILENT, _silent_for_every_default_rule, lambda p: f"{p.parent.name}:{p.name}", least=300)
