"""engine.RuleSplit: some rules run in another process on the same text, the rest here.

The Language Server's lint helper (vjplint.server.lint_helper) runs the nondiff-inference
rules of a big document's first lint while the server runs the others. The merged lint must
be the whole lint: same diagnostics (fixes included), same findings. Here the other side runs
in-process (`lint_source(..., rules=codes)`, exactly what the helper calls), over every rule
fixture, real-world module, eval case and rule example; tests/server/test_lint_helper.py runs it in a
real helper process.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from vjplint.settings.config import Config
from vjplint.diagnostics import Diagnostic
from vjplint.lint.engine import RuleSplit, lint_source
from vjplint.rules.registry import all_rules
from vjplint.server.lint_helper import AHEAD_FAMILY, HELPER_FAMILY, helper_codes

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "fixtures" / "rules").rglob("*.py")) + sorted((ROOT / "tests" / "realworld").glob("*.py")) \
    + sorted((ROOT / "eval" / "cases").rglob("*.py"))
EVERY_RULE = Config(extend_select=tuple(all_rules()))  # default-off rules too


def _dump(diagnostics: List[Diagnostic]) -> List[str]:
    return [repr(d) for d in diagnostics]  # every field, the fix's plan and edits included


def _other_side(name: str, text: str, config: Config, codes) -> Tuple[List[Diagnostic], List[str]]:
    result = lint_source(name, text, config, rules=codes)
    return result.findings or [], result.errors


def _split(name: str, text: str, config: Config, codes=None, fail: bool = False):
    codes = codes or helper_codes()
    calls: List[int] = []

    def collect() -> Optional[Tuple[List[Diagnostic], List[str]]]:
        calls.append(1)
        return None if fail else _other_side(name, text, config, codes)

    return lint_source(name, text, config, split=RuleSplit(frozenset(codes), collect)), calls


def test_the_helper_runs_the_nondiff_inference_rules():
    assert helper_codes() == frozenset(code for code in all_rules() if code.startswith("VJP1"))
    assert {"VJP101", "VJP102", "VJP104"} <= helper_codes()
    # started ahead of the server (at didOpen), the dataflow rules of bwd and jvp rules too
    assert helper_codes(AHEAD_FAMILY) == helper_codes() | {c for c in all_rules() if c.startswith("VJP6")}
    assert {"VJP602", "VJP606"} <= helper_codes(AHEAD_FAMILY)


def test_the_corpus_is_there():
    assert len(CORPUS) > 600


@pytest.mark.paths_equal
@pytest.mark.parametrize("config", [Config(), EVERY_RULE], ids=["default", "every-rule"])
def test_a_split_lint_is_the_whole_lint(config):
    """Both families the server splits off (at didOpen, and later), each against the same whole
    lint of the file (computed once per file and settings)."""
    differing, split_files = [], {HELPER_FAMILY: 0, AHEAD_FAMILY: 0}
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        whole = lint_source(path.name, text, config)
        for family in split_files:
            split, calls = _split(path.name, text, config, codes=helper_codes(family))
            split_files[family] += bool(calls)
            if _dump(split.diagnostics) != _dump(whole.diagnostics) or split.errors != whole.errors:
                differing.append(f"{path.name} ({'+'.join(family)})")
            elif whole.findings is not None and sorted(_dump(split.findings)) != sorted(_dump(whole.findings)):
                differing.append(f"{path.name} ({'+'.join(family)}, findings)")
    assert not differing
    assert min(split_files.values()) > 400  # most files ran both sides, for each family


def test_when_the_other_process_fails_its_rules_run_here():
    text = (ROOT / "fixtures" / "rules" / "VJP101" / "fire_array_at_call_site.py").read_text(encoding="utf-8")
    whole = lint_source("m.py", text)
    failed, calls = _split("m.py", text, Config(), fail=True)
    assert calls == [1]
    assert _dump(failed.diagnostics) == _dump(whole.diagnostics)
    assert any(d.code.startswith("VJP1") for d in whole.diagnostics)


def test_the_other_sides_findings_are_taken_as_they_are():
    """What the other process found is what the merged lint reports (it is not run again here)."""
    text = ("from functools import partial\nimport jax\nimport jax.numpy as jnp\n\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(lo, x):\n    return x\n\n\n"
            "def f_fwd(lo, x):\n    return x, None\n\n\ndef f_bwd(lo, _, g):\n    return (jnp.clip(g, lo),)\n\n\n"
            "f.defvjp(f_fwd, f_bwd)\n")
    whole = lint_source("m.py", text)
    assert [d.code for d in whole.diagnostics] == ["VJP101"]
    marked = [d.__class__(**{**d.__dict__, "message": "from the other side"}) for d in whole.findings]
    merged = lint_source("m.py", text, split=RuleSplit(helper_codes(), lambda: (marked, ["m.py: an error there"])))
    assert [d.message for d in merged.diagnostics] == ["from the other side"]
    assert merged.errors == ["m.py: an error there"]


def test_a_file_without_findings_never_asks_the_other_side():
    text = "import jax\n\n\ndef f(x):\n    return jax.numpy.sin(x)\n"
    result, calls = _split("m.py", text, Config())
    assert calls == [] and result.diagnostics == []


def test_only_runs_only_those_rules():
    path = next(p for p in CORPUS if p.parent.name == "VJP303" and p.name.startswith("fire_"))
    text = path.read_text(encoding="utf-8")
    mine = lint_source(path.name, text, rules=helper_codes())
    theirs = lint_source(path.name, text, rules=frozenset({"VJP303"}))
    assert all(d.code in helper_codes() for d in mine.findings)
    assert theirs.findings and {d.code for d in theirs.findings} == {"VJP303"}


def test_keep_holds_the_model_for_the_caller_to_free():
    """The Language Server frees a whole lint's model after publishing (15 ms on 10,000 lines)."""
    text = (ROOT / "fixtures" / "rules" / "VJP101" / "fire_array_at_call_site.py").read_text(encoding="utf-8")
    kept: List[object] = []
    result = lint_source("m.py", text, keep=kept)
    assert len(kept) == 1 and kept[0].derivatives  # the FileModel the rules read
    assert [repr(d) for d in result.diagnostics] == [repr(d) for d in lint_source("m.py", text).diagnostics]
    skipped: List[object] = []
    lint_source("m.py", "import os\n", keep=skipped)  # never analysed: nothing to keep
    assert skipped == []
