"""fixtures/fix_small/<case>: the small fixes (VJP103, VJP401, VJP402) against exact expected
text, then both sides on real JAX: the original fails (or is wrong) as the rule says, and the
rewrite runs under jit, vmap, grad, jit(grad) and vmap(grad) with the reference values and equals
the original wherever the original works.

Each input.py defines `EXAMPLE()` -> (function of arrays, example arrays), `REFERENCE(*arrays)`
-> (value, gradient of the sum with respect to the first array) and `ORIGINAL`: for "import" or a
transformation, what the original does there ("TypeError: <message part>" for an exception,
"wrong" for a silently different result); every transformation not listed must equal the fix.
Case names are `<code>_<safe|unsafe>_<what>`. Regenerate expected.py with
`VJPLINT_UPDATE_EXPECTED=1 python -m pytest -q tests/test_fix_small.py` and read the diff.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
from pathlib import Path

import pytest

from conftest import FIXTURES

SMALL = FIXTURES / "fix_small"
CASES = sorted(p.name for p in SMALL.iterdir() if p.is_dir())
UPDATE = bool(os.environ.get("VJPLINT_UPDATE_EXPECTED"))
TRANSFORMS = ("jit", "vmap", "grad", "jit(grad)", "vmap(grad)")


def _code(case: str) -> str:
    return case.split("_", 1)[0].upper()


def _fix(text: str, unsafe: bool):
    from vjplint.config import Config
    from vjplint.fixes.apply import fix_text

    return fix_text("input.py", text, Config(), unsafe)


def test_cases_cover_every_small_fix():
    assert {_code(c) for c in CASES} == {"VJP103", "VJP401", "VJP402"}
    assert all(c.split("_")[1] in ("safe", "unsafe") for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_fix_produces_expected_text(case):
    source = (SMALL / case / "input.py").read_text(encoding="utf-8")
    result = _fix(source, unsafe=True)
    if UPDATE:
        (SMALL / case / "expected.py").write_text(result.text, encoding="utf-8")
    expected = (SMALL / case / "expected.py").read_text(encoding="utf-8")
    assert result.errors == [] and result.fixed_count > 0
    assert result.text == expected
    ast.parse(expected)
    assert [d.code for d in result.remaining] == [], "the fix left diagnostics"
    again = _fix(expected, unsafe=True)
    assert again.text == expected and again.fixed_count == 0
    safe_only = _fix(source, unsafe=False)
    assert safe_only.text == (expected if case.split("_")[1] == "safe" else source)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(jax, f, args, transform: str):
    import jax.numpy as jnp

    loss = jax.grad(lambda *a: jnp.sum(f(*a)))
    stacked = [jnp.stack([a, a]) for a in args]
    return {"jit": lambda: jax.jit(f)(*args), "vmap": lambda: jax.vmap(f)(*stacked)[0],
            "grad": lambda: loss(*args), "jit(grad)": lambda: jax.jit(loss)(*args),
            "vmap(grad)": lambda: jax.vmap(loss)(*stacked)[1]}[transform]()


@pytest.mark.parametrize("case", CASES)
def test_pair_on_jax(case, jax_cpu):
    import numpy as np

    jax = jax_cpu
    flag = jax.config.jax_use_direct_linearize  # VJP401's fixture sets it: put it back afterwards
    try:
        fixed = _load(SMALL / case / "expected.py", f"small_fixed_{case}")
        f, args = fixed.EXAMPLE()
        ref_value, ref_grad = fixed.REFERENCE(*args)
        expect = fixed.ORIGINAL
        assert set(expect) <= {"import", *TRANSFORMS}
        results = {}
        for transform in TRANSFORMS:
            results[transform] = out = np.asarray(_run(jax, f, args, transform))
            ref = ref_value if transform in ("jit", "vmap") else ref_grad
            np.testing.assert_allclose(out, np.asarray(ref), rtol=1e-6, atol=1e-6, err_msg=f"{case}: {transform}")
        if "import" in expect:
            kind, message = expect["import"].split(": ", 1)
            with pytest.raises(getattr(builtins, kind), match=message):
                _load(SMALL / case / "input.py", f"small_original_{case}")
            return
        original = _load(SMALL / case / "input.py", f"small_original_{case}")
        f0, args0 = original.EXAMPLE()
        for transform in TRANSFORMS:
            what = expect.get(transform)
            if what is None:
                np.testing.assert_allclose(np.asarray(_run(jax, f0, args0, transform)), results[transform],
                                           rtol=1e-6, atol=1e-6, err_msg=f"{case}: original {transform}")
            elif what == "wrong":
                out = np.asarray(_run(jax, f0, args0, transform))
                assert not np.allclose(out, results[transform]), f"{case}: the original is right under {transform}"
            else:
                kind, message = what.split(": ", 1)
                with pytest.raises(Exception, match=message) as info:
                    _run(jax, f0, args0, transform)
                assert type(info.value).__name__ == kind, f"{case}: {transform} raised {info.value!r}"
    finally:
        jax.config.update("jax_use_direct_linearize", flag)


def test_negative_index_in_a_named_constant_is_not_rewritten():
    """Replacing the name with one index would drop the constant's other entries."""
    source = ("from functools import partial\nimport jax\nARGS = (0, -1)\n"
              "@partial(jax.custom_vjp, nondiff_argnums=ARGS)\ndef f(n, x, m):\n    return x * n * m\n")
    result = _fix(source, unsafe=True)
    assert result.text == source and result.fixed_count == 0
    assert [(d.code, d.fix) for d in result.remaining] == [("VJP103", None)]
    literal = source.replace("nondiff_argnums=ARGS", "nondiff_argnums=(0, -1)")
    assert "nondiff_argnums=(0, 2)" in _fix(literal, unsafe=True).text
