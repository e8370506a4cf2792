"""Every fix kind proven by the verification harness on real JAX, through the real CLI:

* `vjplint verify --unsafe-fixes` on each `fixtures/fix_small/` and `fixtures/fix_structure/`
  input: the rewrite runs under eager, jit, vmap, grad, jit(grad), vmap(grad), grad(jit) and
  grad through `jax.checkpoint` in `lax.scan`, equal to the original wherever the original runs,
  and the original fails (or is wrong) as its rule says (vjplint.verify.kinds);
* the fixtures cover every rule whose module offers a fix;
* a rewrite that changes what the original computes, or still raises, is `failed`;
* `vjplint --fix --unsafe-fixes --verify` writes the proven rewrites and keeps a VJP402 rewrite
  that changes a function's values under jit (why that fix is unsafe), saying why.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import FIXTURES, JAX_ENV, ROOT, device_label, run_cli

CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator
CASES = sorted(d for group in ("fix_small", "fix_structure") for d in (FIXTURES / group).iterdir() if d.is_dir())
EIGHT = ["eager", "jit", "vmap", "grad", "jit(grad)", "vmap(grad)", "grad(jit)", "grad(checkpoint in scan)"]


@pytest.fixture(scope="module")
def cases_run() -> Dict[str, List[dict]]:
    paths = [str((d / "input.py").relative_to(ROOT)) for d in CASES]
    proc = run_cli("verify", "--unsafe-fixes", *paths, "--output-format", "json", "--jobs", "2", env=CPU,
                   timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    grouped: Dict[str, List[dict]] = {}
    for r in json.loads(proc.stdout):
        grouped.setdefault(Path(r["filename"]).parent.name, []).append(r)
    return grouped


def test_fixtures_cover_every_rule_with_a_fix():
    offering = set()
    for module in (ROOT / "vjplint" / "rules").rglob("vjp[0-9]*.py"):
        if re.search(r"self\.(replacing|editing|planning)\(", module.read_text(encoding="utf-8")):
            offering.add(module.name[:6].upper())
    # helpers.py plans the residual rewrite for VJP101/VJP102 (tests/jax/test_verify_fixtures.py).
    covered = {d.name.split("_", 1)[0].upper() for d in CASES}
    assert offering <= covered, f"fix kinds without a fixture proven by the harness: {sorted(offering - covered)}"


@pytest.mark.parametrize("case", [d.name for d in CASES])
def test_fix_kind_is_proven(cases_run, case):
    reports = cases_run.get(case)
    assert reports, f"{case}: nothing verified"
    code = case.split("_", 1)[0].upper()
    for r in reports:
        assert r["status"] == "verified", f"{case}:{r['function']}: {r['reason']}"
        assert r["kind"] == "rewrite" and r["codes"] == [code]
        names = [c["name"] for c in r["checks"]]
        assert names == EIGHT
        ran = [c for c in r["checks"] if c["status"] != "skipped"]
        assert ran and all(c["status"] == "passed" for c in ran)
    main = reports[0]
    if code == "VJP401":  # a no-op setting deleted: equal to the original everywhere
        assert main["hazard"]["status"] == "none-expected"
        assert all(c["detail"] == "" for c in main["checks"])
        return
    assert main["hazard"]["status"] == "confirmed", main["hazard"]
    assert all(c["status"] == "passed" for c in main["checks"])


def test_hazards_are_what_the_rules_say(cases_run):
    hazard = {case: reports[0]["hazard"]["detail"] for case, reports in cases_run.items()}
    assert hazard["vjp103_safe_bare_int"] == ("the original fails at import: TypeError: 'int' object is not "
                                              "iterable (at line 7)")
    assert hazard["vjp301_unsafe_add_defvjp"].startswith(
        "the original raises under eager, jit, vmap, grad, jit(grad), vmap(grad), grad(jit), grad(checkpoint in "
        "scan): AttributeError: No VJP defined for custom_vjp function clipped_log using defvjp.")
    assert hazard["vjp402_unsafe_isinstance"].startswith(
        "the original gives other values under grad, jit(grad), vmap(grad), grad(jit), grad(checkpoint in scan): "
        "the gradient for `x`[")
    assert hazard["vjp319_safe_list_container"].startswith(
        "the original raises under grad(jit), grad(checkpoint in scan): TypeError: Custom VJP fwd rule "
        "scaled_pair_fwd for function scaled_pair must produce a pair")
    assert hazard["vjp309_unsafe_swapped_rules"] == ("the original raises under grad, jit(grad), vmap(grad), "
                                                     "grad(jit), grad(checkpoint in scan): TypeError: softplus_bwd() "
                                                     "missing 1 required positional argument: 'g'")
    # Where the original raises, the rewrite is compared with its own eager values, and says so.
    checks = {c["name"]: c for c in cases_run["vjp307_safe_bare_array"][0]["checks"]}
    assert checks["jit"]["detail"] == ""
    assert checks["grad"]["detail"] == "the original raises here; compared with the rewrite's eager values"


def _verify(tmp_path: Path, name: str, original: str, rewritten: str, codes: List[str]):
    from vjplint.settings.config import Config
    from vjplint.verify.api import verify_rewrites

    path = tmp_path / f"{name}.py"
    path.write_text(original)
    items = [{"name": name, "kind": "rewrite", "codes": codes, "key": name}]
    [report] = verify_rewrites(str(path), original, rewritten, items, Config(root=str(tmp_path)))
    return report


def test_a_rewrite_that_changes_the_values_or_still_raises_fails(tmp_path, jax_cpu):
    source = (FIXTURES / "fix_small" / "vjp309_unsafe_swapped_rules" / "expected.py").read_text()
    original = (FIXTURES / "fix_small" / "vjp309_unsafe_swapped_rules" / "input.py").read_text()
    # The rules swapped back, and the primal changed on the way: eager/jit/vmap differ from the original.
    changed = source.replace("return jnp.logaddexp(x, 0.0)\n", "return jnp.logaddexp(x, 1.0)\n", 1)
    report = _verify(tmp_path, "softplus", original, changed, ["VJP309"])
    assert report.status == "failed"
    assert report.reason.startswith("eager: differs from the original: the output[")
    # A bwd that still returns the wrong structure: every gradient raises.
    still = source.replace("return (g * jax.nn.sigmoid(x),)", "return (g * jax.nn.sigmoid(x), None)")
    report = _verify(tmp_path, "softplus", original, still, ["VJP309"])
    assert report.status == "failed"
    assert report.reason.startswith("grad: TypeError: Custom VJP bwd rule must produce an output with the same "
                                    "container (pytree) structure")


ROUNDING = textwrap.dedent('''\
    import jax
    import jax.numpy as jnp
    from jax.interpreters.ad import JVPTracer


    def round_ste(x):
        if isinstance(x, JVPTracer):
            return x + jax.lax.stop_gradient(jnp.round(x) - x)
        return jnp.round(x)


    def round_or_pass(x):
        # Not straight-through: the traced branch skips the rounding, so with jax.core.Tracer
        # (also true under jit and vmap) the jitted values change.
        if isinstance(x, JVPTracer):
            return x
        return jnp.round(x)
''')


def test_fix_verify_writes_the_proven_vjp402_rewrite_and_keeps_the_other(tmp_path):
    path = tmp_path / "rounding.py"
    path.write_text(ROUNDING)
    proc = run_cli("--fix", "--unsafe-fixes", "--verify", "--no-cache", "rounding.py", cwd=tmp_path, env=CPU,
                   timeout=600)
    text = path.read_text()
    assert "    if isinstance(x, jax.core.Tracer):\n        return x + jax.lax.stop_gradient" in text
    assert "    if isinstance(x, JVPTracer):\n        return x\n" in text
    assert f"rounding.py:6: round_ste: verified on {device_label()}" in proc.stderr
    assert re.search(r"rounding\.py:12: round_or_pass: failed: jit: differs from the original: the output\[\d\] "
                     r"is -?[\d.]+, expected -?[\d.]+", proc.stderr), proc.stderr
    assert "rounding.py: not proven, left unchanged: round_or_pass" in proc.stderr
    assert proc.returncode == 1
    assert "rounding.py:15:8: VJP402 [*]" in proc.stdout
