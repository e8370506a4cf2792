"""fixtures/fix_structure/<case>: the structure rules' fixes (VJP312, VJP319, VJP323) against exact expected text,
then both sides on real JAX, as tests/unit/test_fix_small.py does for the small fixes: the original
fails where the rule says (`grad(jit(f))`, `grad` through `jax.checkpoint` in `lax.scan`), and the
rewrite runs under jit, vmap, grad, jit(grad), vmap(grad) and those two with the reference values,
equal to the original wherever the original works.

Each input.py defines `EXAMPLE()` -> (function of arrays, example arrays), `REFERENCE(*arrays)` ->
(value, gradient of the sum with respect to the first array) and `ORIGINAL`: for a transformation,
what the original does there ("TypeError: <message part>"). Regenerate expected.py with
`VJPLINT_UPDATE_EXPECTED=1 python -m pytest -q tests/unit/test_fix_structure.py` and read the diff.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

CASES_DIR = FIXTURES / "fix_structure"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())
UPDATE = bool(os.environ.get("VJPLINT_UPDATE_EXPECTED"))
TRANSFORMS = ("jit", "vmap", "grad", "jit(grad)", "vmap(grad)", "grad(jit)", "grad(checkpoint in scan)")


def _fix(text: str, unsafe: bool):
    from vjplint.settings.config import Config
    from vjplint.fixes.apply import fix_text

    return fix_text("input.py", text, Config(), unsafe)


def test_cases_are_named_after_their_code_and_safety():
    assert {c.split("_")[0] for c in CASES} == {"vjp312", "vjp319", "vjp323"}
    assert all(c.split("_")[1] in ("safe", "unsafe") for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_fix_produces_expected_text(case):
    source = (CASES_DIR / case / "input.py").read_text(encoding="utf-8")
    result = _fix(source, unsafe=True)
    if UPDATE:
        (CASES_DIR / case / "expected.py").write_text(result.text, encoding="utf-8")
    expected = (CASES_DIR / case / "expected.py").read_text(encoding="utf-8")
    assert result.errors == [] and result.fixed_count == 1
    assert result.text == expected
    ast.parse(expected)
    assert [d.code for d in result.remaining] == [], "the fix left diagnostics"
    again = _fix(expected, unsafe=True)
    assert again.text == expected and again.fixed_count == 0
    assert _fix(source, unsafe=False).text == (expected if case.split("_")[1] == "safe" else source)


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

    def scanned(*a):
        body = jax.checkpoint(lambda c, _: (c + jnp.sum(f(*a)), None))
        return jax.lax.scan(body, 0.0, None, length=1)[0]

    return {"jit": lambda: jax.jit(f)(*args), "vmap": lambda: jax.vmap(f)(*stacked)[0],
            "grad": lambda: loss(*args), "jit(grad)": lambda: jax.jit(loss)(*args),
            "vmap(grad)": lambda: jax.vmap(loss)(*stacked)[1],
            "grad(jit)": lambda: jax.grad(jax.jit(lambda *a: jnp.sum(f(*a))))(*args),
            "grad(checkpoint in scan)": lambda: jax.grad(scanned)(*args)}[transform]()


@pytest.mark.jax
@pytest.mark.parametrize("case", CASES)
def test_pair_on_jax(case, jax_cpu):
    import numpy as np

    jax = jax_cpu
    fixed = _load(CASES_DIR / case / "expected.py", f"structure_fixed_{case}")
    f, args = fixed.EXAMPLE()
    ref_value, ref_grad = fixed.REFERENCE(*args)
    results = {}
    for transform in TRANSFORMS:
        results[transform] = out = np.asarray(_run(jax, f, args, transform))
        ref = ref_value if transform in ("jit", "vmap") else ref_grad
        np.testing.assert_allclose(out, np.asarray(ref), rtol=1e-6, atol=1e-6, err_msg=f"{case}: {transform}")
    original = _load(CASES_DIR / case / "input.py", f"structure_original_{case}")
    assert set(original.ORIGINAL) <= set(TRANSFORMS)
    f0, args0 = original.EXAMPLE()
    for transform in TRANSFORMS:
        what = original.ORIGINAL.get(transform)
        if what is None:
            np.testing.assert_allclose(np.asarray(_run(jax, f0, args0, transform)), results[transform],
                                       rtol=1e-6, atol=1e-6, err_msg=f"{case}: original {transform}")
        else:
            kind, message = what.split(": ", 1)
            with pytest.raises(Exception, match=message) as info:
                _run(jax, f0, args0, transform)
            assert type(info.value).__name__ == kind, f"{case}: {transform} raised {info.value!r}"
