"""The residual-plus-None plan is made once, when the file is linted, and carried with the fix
(`ResidualPlusNone.planned`, `planned_on`): applying the fix writes that plan without collecting
and planning the file again, unless the text changed since (an editor's stale quick fix) or the
fixes of one derivative move more together than any one plan; a fix revived from the result
cache carries no plan and plans again."""

from __future__ import annotations

from typing import List

import pytest
from tests.conftest import FIXTURES

from vjplint.batch.cache import decode, encode, _allowed
from vjplint.diagnostics import ResidualPlusNone
from vjplint.fixes import apply
from vjplint.fixes.edits import apply_edits
from vjplint.lint.engine import lint_source
from vjplint.lint.engine import prefilter_names
from vjplint.model.run_facts import NO_FACTS
from vjplint.plans.residual_plan import Plan, lines_digest, plan
from vjplint.syntax.source import parse
from vjplint.settings.config import Config
from vjplint.syntax.positions import source_lines

CANONICAL = (FIXTURES / "fix" / "safe_canonical" / "input.py").read_text(encoding="utf-8")
EXPECTED = (FIXTURES / "fix" / "safe_canonical" / "expected.py").read_text(encoding="utf-8")


def _fix_plans(text: str) -> List[ResidualPlusNone]:
    return list(dict.fromkeys(d.fix.plan for d in lint_source("input.py", text).diagnostics
                              if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)))


@pytest.fixture
def replans(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """How many times the writer collected the file to plan again."""
    calls: List[int] = []
    original = apply._derivatives

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(apply, "_derivatives", spy)
    return calls


def test_the_lint_s_plan_travels_with_the_fix() -> None:
    [fp] = _fix_plans(CANONICAL)
    assert isinstance(fp.planned, Plan) and fp.planned.name == "clip_gradient" and fp.planned.moved == (0, 1)
    assert fp.planned_on == lines_digest(source_lines(CANONICAL))
    # carried, not compared: the same fix whoever planned it, and one key in a dict of plans
    bare = ResidualPlusNone(fp.target, fp.line, fp.positions)
    assert fp == bare and hash(fp) == hash(bare) and "planned" not in repr(fp)


def test_applying_the_fix_does_not_plan_again(replans: List[int]) -> None:
    result = apply.fix_text("input.py", CANONICAL, Config(), unsafe=True)
    assert result.text == EXPECTED and result.errors == []
    assert replans == []


def test_the_json_edits_do_not_plan_again(replans: List[int]) -> None:
    diagnostics = lint_source("input.py", CANONICAL).diagnostics
    apply.attach_fix_edits(diagnostics, {"input.py": source_lines(CANONICAL)}, Config(), once=True)
    [edits] = [d.fix.edits for d in diagnostics if d.fix is not None and d.fix.edits]
    assert apply_edits(CANONICAL, edits) == EXPECTED
    assert replans == []


def test_a_stale_plan_is_made_again_from_the_text_it_is_applied_to(replans: List[int]) -> None:
    """A quick fix computed on an older text: since, fwd saves `x` and bwd reads it (same rows).
    The carried plan (the residuals were None: they become the moved values alone) would drop
    `r`; the writer sees the text changed, plans again and keeps it, as a fresh lint's fix does."""
    [stale] = _fix_plans(CANONICAL)
    edited = (CANONICAL.replace("return x, None", "return x, x")
              .replace("def clip_gradient_bwd(lo, hi, _, g):", "def clip_gradient_bwd(lo, hi, r, g):")
              .replace("jnp.clip(g, lo, hi)", "jnp.clip(g * r, lo, hi)"))
    done = ResidualPlusNone.edits(edited, [stale], apply.FileContext(Config()))
    assert replans == [1]
    [fresh] = _fix_plans(edited)
    assert fresh.planned.mode == "append" and stale.planned.mode == "tuple"
    assert done.made == (stale,) and done.text == ResidualPlusNone.edits(edited, [fresh], apply.FileContext(Config())).text
    assert "    r, lo, hi = res\n" in done.text and "return x, (x, lo, hi)" in done.text
    assert replans == [1]  # the fresh plan was written as it came


def test_a_plan_for_other_moves_is_made_again(replans: List[int]) -> None:
    """Two fixes of one derivative, each carrying its plan for one position, are made together:
    neither carried plan moves both, so the writer plans the union; each alone writes its own."""
    [fp] = _fix_plans(CANONICAL)
    lines = source_lines(CANONICAL)
    names = tuple(n.decode() for n in prefilter_names(Config(), NO_FACTS))
    model, d = apply._derivatives(CANONICAL, lines, parse(CANONICAL), None, names, Config(), NO_FACTS)[(fp.target, fp.line)]
    digest = lines_digest(lines)
    one, other = (ResidualPlusNone(fp.target, fp.line, (i,), planned=plan(model, d, (i,)), planned_on=digest)
                  for i in (0, 1))
    replans.clear()
    assert ResidualPlusNone.edits(CANONICAL, [one, other], apply.FileContext(Config())).text == EXPECTED
    assert replans == [1]
    alone = ResidualPlusNone.edits(CANONICAL, [one], apply.FileContext(Config())).text
    assert replans == [1] and alone is not None and "@partial(jax.custom_vjp, nondiff_argnums=(1,))" in alone
    assert "    return x, lo\n" in alone and "def clip_gradient_bwd(hi, lo, g):" in alone


def test_the_result_cache_keeps_no_plan_and_a_revived_fix_plans_again(replans: List[int]) -> None:
    [fp] = _fix_plans(CANONICAL)
    stored = encode(fp)
    assert set(stored["f"]) == {"target", "line", "positions"}
    revived = decode(stored, _allowed())
    assert revived == fp and revived.planned is None and revived.planned_on == ""
    assert ResidualPlusNone.edits(CANONICAL, [revived], apply.FileContext(Config())).text == EXPECTED
    assert replans == [1]
