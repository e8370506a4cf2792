"""The codemod's fixtures proven on real JAX through the real CLI:

* every `fixtures/fix/<case>/` pair that rewrites something: `vjplint verify input.py
  --rewritten expected.py` (all pairs in one CLI run, one harness process per file);
* every rule fixture the codemod rewrites: `vjplint verify fixtures/rules` (the fix as
  `vjplint --fix` computes it);
* `vjplint --fix --verify` applies what is proven and leaves a rewrite that fails unchanged.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import FIXTURES, JAX_ENV, ROOT, run_cli

CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator
FIX = FIXTURES / "fix"


def _rewriting_pairs() -> List[Path]:
    if not FIX.is_dir():
        return []
    pairs = [d for d in sorted(FIX.iterdir()) if (d / "input.py").is_file() and (d / "expected.py").is_file()]
    return [d for d in pairs if (d / "input.py").read_bytes() != (d / "expected.py").read_bytes()]


def _other_rule(d: Path) -> bool:
    """A pair about another rule's fix (`FIX_RULE = "VJP307"` in input.py): verify's `--rewritten`
    compares nondiff positions, so such a pair is proven by verify's own rewrite of the input."""
    return "\nFIX_RULE = " in (d / "input.py").read_text(encoding="utf-8")


PAIRS = [d for d in _rewriting_pairs() if not _other_rule(d)]
OTHER_RULE_PAIRS = [d for d in _rewriting_pairs() if _other_rule(d)]


def _group(reports: List[dict], key) -> Dict[str, List[dict]]:
    grouped: Dict[str, List[dict]] = {}
    for r in reports:
        grouped.setdefault(key(r), []).append(r)
    return grouped


def _assert_proven(reports: List[dict]) -> None:
    assert reports, "the rewrite changed no custom_vjp's nondiff positions"
    for r in reports:
        assert r["status"] == "verified", f"{r['filename']}:{r['function']}: {r['status']}: {r['reason']}"
        if r["kind"] == "residual":
            assert [c["status"] for c in r["checks"]] == ["passed"] * 6
            assert r["hazard"]["status"] == "confirmed", r["hazard"]
            continue
        # Every other fix kind (tests/jax/test_verify_fix_kinds.py): the checks that can run passed.
        assert r["checks"] and {c["status"] for c in r["checks"]} <= {"passed", "skipped"}
        assert r["checks"][0]["status"] == "passed"
        expected = "none-expected" if r["codes"] == ["VJP401"] else "confirmed"
        assert r["hazard"]["status"] == expected, r["hazard"]


@pytest.fixture(scope="module")
def pairs_run():
    if not PAIRS:
        pytest.skip("no fixtures/fix pairs that rewrite anything")
    originals = [str((d / "input.py").relative_to(ROOT)) for d in PAIRS]
    rewritten = [a for d in PAIRS for a in ("--rewritten", str((d / "expected.py").relative_to(ROOT)))]
    proc = run_cli("verify", *originals, *rewritten, "--output-format", "json", "--jobs", "2", env=CPU, timeout=1200)
    assert proc.stderr == ""
    return proc, _group(json.loads(proc.stdout), lambda r: Path(r["filename"]).parent.name)


@pytest.mark.parametrize("case", [d.name for d in PAIRS])
def test_fix_pair_is_proven_on_jax(pairs_run, case):
    _assert_proven(pairs_run[1].get(case, []))


def test_fix_pairs_exit_zero(pairs_run):
    proc, grouped = pairs_run
    assert sorted(grouped) == sorted(d.name for d in PAIRS)
    assert proc.returncode == 0


@pytest.mark.parametrize("case", [d.name for d in OTHER_RULE_PAIRS])
def test_another_rules_fix_pair_is_proven_by_verifys_rewrite(case):
    proc = run_cli("verify", str((FIX / case / "input.py").relative_to(ROOT)), "--output-format", "json",
                   env=CPU, timeout=600)
    assert proc.stderr == "" and proc.returncode == 0, proc.stdout + proc.stderr
    reports = json.loads(proc.stdout)
    _assert_proven(reports)


@pytest.fixture(scope="module")
def rules_run():
    before = {p: p.read_bytes() for p in (FIXTURES / "rules").rglob("*.py")}
    proc = run_cli("verify", "fixtures/rules", "--output-format", "json", "--jobs", "2", env=CPU, timeout=1200)
    after = {p: p.read_bytes() for p in (FIXTURES / "rules").rglob("*.py")}
    return proc, _group(json.loads(proc.stdout), lambda r: r["filename"]), before == after


# A rule fixture whose rewrite cannot be run: the definition alone, nothing says what `times` is.
# And one whose only argument is a dict of arrays: no probed array shape works with the original.
# fire_bare_int: `times` is synthesised as a number (`x * times`, the synthesiser verify shares with
# check-grads), and no probed shape runs the original, whose registration is the hazard.
UNVERIFIABLE = {"fixtures/rules/VJP103/fire_bare_int.py": "no probed shape for `x` works with the original",
                "fixtures/rules/VJP307/fire_dict_from_helper.py": "no probed shape for `p` works with the original"}


def test_every_rewritten_rule_fixture_is_proven(rules_run):
    proc, grouped, _ = rules_run
    assert grouped, "vjplint --fix rewrites none of the rule fixtures"
    for filename, reports in grouped.items():
        if filename in UNVERIFIABLE:
            [report] = reports
            assert report["status"] == "unverified" and report["reason"].startswith(UNVERIFIABLE[filename])
            continue
        _assert_proven(reports)
    assert sorted(f for f in grouped if f in UNVERIFIABLE) == sorted(UNVERIFIABLE)
    assert proc.returncode == 1  # the unverifiable one
    kinds = {(r["kind"], tuple(r["codes"])) for reports in grouped.values() for r in reports}
    assert {codes for kind, codes in kinds if kind == "rewrite"} >= {("VJP201",), ("VJP306",), ("VJP307",),
                                                                     ("VJP319",), ("VJP401",)}


def test_verify_alone_changes_nothing(rules_run):
    assert rules_run[2]


TILE = textwrap.dedent('''\
    from functools import partial

    import jax
    import jax.numpy as jnp


    # `reps` is annotated as an array but a helper three calls deep uses it as a Python int (the
    # lint follows two): moving it out of nondiff_argnums makes it a tracer inside the custom_vjp,
    # so `count(reps)` fails under jit.
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def tiled(reps: jax.Array, x):
        return jnp.tile(x, count(reps))


    def count(reps):
        return _checked(reps)


    def _checked(reps):
        return _as_int(reps)


    def _as_int(reps):
        return int(reps)


    def tiled_fwd(reps, x):
        return jnp.tile(x, count(reps)), None


    def tiled_bwd(reps, _, g):
        return (g.reshape(count(reps), -1).sum(0),)


    tiled.defvjp(tiled_fwd, tiled_bwd)


    def tiled_args():
        return jnp.array(2), jnp.arange(3.0)
''')


def test_fix_verify_keeps_a_failing_rewrite_and_applies_a_proven_one(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vjplint.verify]\nexamples = {"tile.tiled" = "tile:tiled_args"}\n')
    (tmp_path / "tile.py").write_text(TILE)
    gate = (ROOT / "tests" / "data" / "verify" / "unsafe_gate.py").read_text()
    (tmp_path / "gate.py").write_text(gate)
    shutil.copy(FIX / "safe_canonical" / "input.py", tmp_path / "clip.py")
    proc = run_cli("--fix", "--unsafe-fixes", "--verify", "--no-cache", "tile.py", "gate.py", "clip.py",
                   cwd=tmp_path, env=CPU, timeout=900)
    assert proc.returncode != 0
    assert (tmp_path / "tile.py").read_text() == TILE
    assert (tmp_path / "gate.py").read_text() == gate
    assert (tmp_path / "clip.py").read_text() == (FIX / "safe_canonical" / "expected.py").read_text()
    assert ("tile.py:10: tiled: failed: jit: ConcretizationTypeError: Abstract tracer value encountered where "
            "concrete value is expected") in proc.stderr
    assert ("gate.py:11: gated: failed: jit(grad): TracerBoolConversionError: Attempted boolean conversion of "
            "traced array with shape float32[]. (also under vmap(grad))") in proc.stderr
