"""Issue 46: every module under 700 lines. The fix layer and its planning (vjplint/fixes,
vjplint/plans) hold to it: a module that grows past it is split by what its parts do
(`plans/residual_plan.py` decides and refuses, `plans/residual_reads.py` reads the code for it)."""

from __future__ import annotations

from tests.conftest import ROOT

LIMIT = 700


def test_every_fix_and_plan_module_is_under_700_lines() -> None:
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for folder in ("fixes", "plans") for path in sorted((ROOT / "vjplint" / folder).glob("*.py"))}
    assert "vjplint/plans/residual_plan.py" in sizes and "vjplint/fixes/apply.py" in sizes
    assert {name: n for name, n in sizes.items() if n >= LIMIT} == {}
