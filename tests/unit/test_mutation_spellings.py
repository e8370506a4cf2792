"""Metamorphic test: vjplint's findings on the mutation evaluation do not depend on the spelling.

Every correct definition of `eval/mutation/bases/` must stay silent in every spelling
(`eval/mutation/mutate.py`'s SPELLINGS: decorator and call form, `def` and `lambda`, a helper, a
`staticmethod`, keyword nondiff, `functools.partial`, neutral names, a factory, a method, a class body,
the output or the first differentiable input held in a tuple, dict or NamedTuple), and every mutant JAX labels a
hazard (`eval/mutation/labels.json`) must be found in every spelling, its canonical one included:
a code the same spelling of its base does not draw. For time, the hazards are a sample: the first
HAZARDS_PER_OPERATOR hazard mutants of each operator (by name); `python eval/mutation/score.py
--spellings` reports all of them.

What does not hold today is listed in `eval/mutation/spelling_failures.txt` and runs as a strict
xfail: a listed case that starts passing fails the test until the list is updated, and a case
that newly fails is a regression.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

import pytest

from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source

ROOT = Path(__file__).resolve().parents[2]
MUT = ROOT / "eval" / "mutation"
sys.path.insert(0, str(MUT))
import mutate  # noqa: E402  (ast only)

HAZARDS_PER_OPERATOR = 2
KNOWN = MUT / "spelling_failures.txt"
CONFIG = Config(extend_select=("VJP106", "VJP107"))
SPELLINGS = ("canonical",) + tuple(mutate.SPELLINGS)


def _manifest() -> Dict:
    """The original set: the held-out bases and their mutants are measured by score.py, not tested here."""
    m = json.loads(mutate.MANIFEST.read_text(encoding="utf-8"))
    m["bases"] = {s: b for s, b in m["bases"].items() if not b.get("held_out")}
    m["mutants"] = {k: v for k, v in m["mutants"].items() if not v.get("held_out")}
    return m


def _labels() -> Dict:
    return json.loads((MUT / "labels.json").read_text(encoding="utf-8"))["entries"]


def known_failures() -> FrozenSet[str]:
    lines = KNOWN.read_text(encoding="utf-8").splitlines() if KNOWN.exists() else []
    return frozenset(ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip())


def subjects() -> List[Tuple[str, str, Optional[str]]]:
    """(key, path, base stem or None for a base)."""
    manifest, labels = _manifest(), _labels()
    out: List[Tuple[str, str, Optional[str]]] = [(f"bases/{s}", b["path"], None) for s, b in sorted(manifest["bases"].items())]
    per_op: Dict[str, int] = {}
    for key, m in sorted(manifest["mutants"].items()):
        if labels[f"mutants/{key}"]["label"] != "hazard" or per_op.get(m["operator"], 0) >= HAZARDS_PER_OPERATOR:
            continue
        per_op[m["operator"]] = per_op.get(m["operator"], 0) + 1
        out.append((f"mutants/{key}", m["path"], m["base"]))
    return out


@lru_cache(maxsize=None)
def spelled(path: str, spelling: str) -> Optional[str]:
    source = (ROOT / path).read_text(encoding="utf-8")
    return source if spelling == "canonical" else mutate.spell(source, spelling)


@lru_cache(maxsize=None)
def codes(path: str, spelling: str) -> FrozenSet[str]:
    text = spelled(path, spelling)
    assert text is not None
    result = lint_source(f"{Path(path).stem}_{spelling}.py", text, CONFIG)
    return frozenset(d.code for d in result.diagnostics)


def _cases() -> List[object]:
    known = known_failures()
    out = []
    for key, path, base in subjects():
        for sp in SPELLINGS:
            if spelled(path, sp) is None:
                continue
            case_id = f"{sp} {key}"
            marks = [pytest.mark.xfail(strict=True, reason="listed in eval/mutation/spelling_failures.txt")] \
                if case_id in known else []
            out.append(pytest.param(sp, key, path, base, id=case_id, marks=marks))
    return out


@pytest.mark.parametrize("spelling,key,path,base", _cases())
def test_spelling_keeps_the_verdict(spelling: str, key: str, path: str, base: Optional[str]) -> None:
    got = codes(path, spelling)
    if base is None:
        assert not got, f"correct definition {key} draws {sorted(got)} when spelled {spelling}"
        return
    base_path = _manifest()["bases"][base]["path"]
    base_codes = codes(base_path, spelling) if spelled(base_path, spelling) is not None else codes(base_path, "canonical")
    assert got - base_codes, (f"hazard {key} (JAX: {_labels()['mutants/' + key[len('mutants/'):]]['failing']}) is not "
                              f"found when spelled {spelling}: codes {sorted(got)}, its base {sorted(base_codes)}")


def test_known_failures_name_existing_cases() -> None:
    """A stale line in spelling_failures.txt (a case that no longer exists) is an error."""
    existing = {f"{sp} {key}" for key, path, _ in subjects() for sp in SPELLINGS if spelled(path, sp) is not None}
    assert sorted(known_failures() - existing) == []


def test_every_spelling_applies_somewhere() -> None:
    """Each spelling operator rewrites at least five bases (an operator that never applies tests nothing)."""
    manifest = _manifest()
    for sp in mutate.SPELLINGS:
        n = sum(spelled(b["path"], sp) is not None for b in manifest["bases"].values())
        assert n >= 5, f"spelling {sp} applies to {n} bases"


def test_the_two_module_spellings_split_a_definition_into_importable_modules() -> None:
    """`mutate.split_rules` (the rules in another module, `score.py --spellings` writes both files):
    the registering module imports the rules it registers, by name or through the module, and
    keeps no other use of them; each applies to at least five bases."""
    manifest = _manifest()
    clip = (ROOT / manifest["bases"]["jax_docs_clip_gradient"]["path"]).read_text(encoding="utf-8")
    main, rules = mutate.split_rules(clip, "rules_module")
    assert f"from {mutate.RULES_MODULE} import clip_gradient_bwd, clip_gradient_fwd" in main
    assert "clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)" in main and "def clip_gradient_fwd" not in main
    assert "def clip_gradient_fwd(lo, hi, x):" in rules and "def clip_gradient_bwd(res, g):" in rules
    main, _ = mutate.split_rules(clip, "rules_module_attr")
    assert f"import {mutate.RULES_MODULE} as R" in main
    assert "clip_gradient.defvjp(R.clip_gradient_fwd, R.clip_gradient_bwd)" in main
    for sp in mutate.MODULE_SPELLINGS:
        n = sum(mutate.split_rules((ROOT / b["path"]).read_text(encoding="utf-8"), sp) is not None
                for b in manifest["bases"].values())
        assert n >= 5, f"spelling {sp} applies to {n} bases"
