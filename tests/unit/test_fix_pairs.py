"""fixtures/fix/<case>: the residual-plus-None codemod against exact expected text, and the
original/fixed pairs on real JAX (see fixtures/fix/README.md for the conventions)."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Tuple

import pytest

from tests.conftest import FIXTURES, ROOT, load_fixture_module

FIX_FIXTURES = FIXTURES / "fix"
# Not .vjplint_cache/: fixtures/fix has its own pyproject.toml, so a lint of it caches there.
CASES = sorted(p.name for p in FIX_FIXTURES.iterdir()
               if p.is_dir() and not p.name.startswith(".")) if FIX_FIXTURES.exists() else []
RUNNABLE = [c for c in CASES if not c.startswith("refuse_")]
UPDATE = bool(os.environ.get("VJPLINT_UPDATE_EXPECTED"))
RTOL = ATOL = 1e-6


def _kind(case: str) -> str:
    kind = case.split("_", 1)[0]
    assert kind in ("safe", "unsafe", "refuse"), f"{case}: name it safe_*, unsafe_* or refuse_*"
    return kind


def _read(case: str, name: str) -> str:
    return (FIX_FIXTURES / case / name).read_text(encoding="utf-8")


def _fix(text: str, unsafe: bool, filename: str = "input.py"):
    from vjplint.settings.config import Config
    from vjplint.fixes.apply import fix_text

    return fix_text(filename, text, Config(), unsafe)


def _concise(case: str) -> str:
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source
    from vjplint.output import OutputContext, get_formatter

    display = (FIX_FIXTURES / case / "input.py").relative_to(ROOT).as_posix()
    diagnostics = lint_source(display, _read(case, "input.py"), Config()).diagnostics
    return get_formatter("concise")(diagnostics, OutputContext())


def _fix_rule(case: str) -> str:
    """The rule whose fix the case is about: `FIX_RULE = "VJP307"` in input.py, or the
    residual-plus-None codemod's (VJP101/VJP102) when the module names none."""
    for stmt in ast.parse(_read(case, "input.py")).body:
        if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == ["FIX_RULE"]:
            return ast.literal_eval(stmt.value)
    return "VJP101/VJP102"


def test_every_kind_of_case_is_present():
    kinds = {_kind(c) for c in CASES}
    assert kinds == {"safe", "unsafe", "refuse"}


@pytest.mark.parametrize("case", CASES)
def test_fix_produces_expected_text(case):
    source = _read(case, "input.py")
    result = _fix(source, unsafe=True)
    if UPDATE:
        (FIX_FIXTURES / case / "expected.py").write_text(result.text, encoding="utf-8")
    assert result.errors == []
    assert result.text == _read(case, "expected.py")
    if _kind(case) == "refuse":
        assert result.text == source and result.fixed_count == 0
    else:
        assert result.text != source and result.fixed_count > 0
    # Without --unsafe-fixes only safe cases change.
    safe_only = _fix(source, unsafe=False)
    assert safe_only.text == (result.text if _kind(case) == "safe" else source)


@pytest.mark.parametrize("case", CASES)
def test_lint_output_names_the_fix_or_why_not(case):
    output = _concise(case)
    if UPDATE:
        (FIX_FIXTURES / case / "lint.txt").write_text(output, encoding="utf-8")
    assert output == _read(case, "lint.txt")
    codes = _fix_rule(case).split("/")
    nondiff = [line for line in output.splitlines() if any(f" {code} " in line for code in codes)]
    assert nondiff, f"the case is about {_fix_rule(case)}"
    for line in nondiff:
        if _kind(case) == "refuse":
            assert "(no automatic fix: " in line and "[*]" not in line
        else:
            assert ("[*]" in line) == (_kind(case) == "safe") and "no automatic fix" not in line
    if _kind(case) == "unsafe":
        assert "can be enabled with --unsafe-fixes" in output


@pytest.mark.parametrize("case", CASES)
def test_fixed_code_parses_is_stable_and_clean(case):
    import libcst

    expected = _read(case, "expected.py")
    ast.parse(expected)
    libcst.parse_module(expected)
    again = _fix(expected, unsafe=True)
    assert again.text == expected and again.fixed_count == 0
    if _kind(case) != "refuse":
        left = [d.code for d in again.remaining if d.code in ("VJP101", "VJP102", "VJP104", _fix_rule(case))]
        assert left == [], f"the fix left {left}"


# -- on real JAX -------------------------------------------------------------------------------------------
def _nondiff_positions(text: str) -> Dict[str, Tuple[int, ...]]:
    from vjplint.facts.collect import collect

    model = collect(ast.parse(text), text.splitlines())
    return {d.name: d.nondiff for d in model.derivatives if d.kind == "vjp"}


def _lookup(module, path: str):
    value = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _is_array(value) -> bool:
    import jax
    import numpy as np

    return isinstance(value, (jax.Array, np.ndarray))


def _closed_over(f, args: tuple, traced: List[int]):
    """f with the non-array arguments fixed, taking the array arguments positionally."""
    def g(*values):
        full = list(args)
        for i, v in zip(traced, values):
            full[i] = v
        return f(*full)
    return g


def _loss(f):
    import jax
    import jax.numpy as jnp

    return lambda *a: sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(f(*a)))


def _close(actual, expected, what: str) -> None:
    import jax
    import numpy as np

    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.jax
@pytest.mark.parametrize("case", RUNNABLE)
def test_pair_on_jax(case, jax_cpu):
    jax = jax_cpu
    import jax.numpy as jnp

    original = load_fixture_module(FIX_FIXTURES / case / "input.py")
    fixed = load_fixture_module(FIX_FIXTURES / case / "expected.py")
    if _fix_rule(case) != "VJP101/VJP102":
        _other_rule_pair_on_jax(jax, original, fixed)
        return
    before = _nondiff_positions(_read(case, "input.py"))
    after = _nondiff_positions(_read(case, "expected.py"))
    examples = original.EXAMPLE_ARGS()
    assert examples, "EXAMPLE_ARGS() lists no function"
    for path, args in examples.items():
        last = path.rsplit(".", 1)[-1]  # `self.quantize = jax.custom_vjp(...)` is named `self.quantize`
        name = next(k for k in before if k == last or k.endswith(f".{last}"))
        moved = sorted(set(before[name]) - set(after[name]))
        assert moved, f"{path}: the fix moved nothing"
        traced = [i for i, a in enumerate(args) if _is_array(a)]
        assert set(moved) <= set(traced), f"{path}: give the moved arguments as arrays in EXAMPLE_ARGS"
        diff = [i for i in traced if i not in before[name]]
        values = [args[i] for i in traced]
        old_f = _closed_over(_lookup(original, path), args, traced)
        new_f = _closed_over(_lookup(fixed, path), args, traced)
        # The reference: the original, eagerly, with concrete nondiff values.
        ref_value = old_f(*values)
        ref_grads = jax.grad(_loss(old_f), argnums=[traced.index(i) for i in diff])(*values)
        # The hazard was real: jit with the arrays traced fails on the original.
        with pytest.raises(jax.errors.UnexpectedTracerError, match="nondiff_argnums"):
            jax.jit(old_f)(*values)
        # The fixed function under every transformation, all arrays traced.
        _close(jax.jit(new_f)(*values), ref_value, f"{path}: jit")
        stacked = [jnp.stack([v, v]) for v in values]
        _close(jax.vmap(new_f)(*stacked), jax.tree_util.tree_map(lambda r: jnp.stack([r, r]), ref_value),
               f"{path}: vmap")
        every = list(range(len(traced)))
        grad = jax.grad(_loss(new_f), argnums=every)
        for label, grads in (("grad", grad(*values)), ("jit(grad)", jax.jit(grad)(*values))):
            _check_grads(grads, ref_grads, traced, diff, moved, f"{path}: {label}")
        batched = jax.vmap(grad)(*stacked)
        for row in range(2):
            grads = jax.tree_util.tree_map(lambda b: b[row], batched)
            _check_grads(grads, ref_grads, traced, diff, moved, f"{path}: vmap(grad) row {row}")


def _check_grads(grads, ref_grads, traced: List[int], diff: List[int], moved: List[int], what: str) -> None:
    import numpy as np

    for i, position in enumerate(traced):
        if position in diff:
            _close(grads[i], ref_grads[diff.index(position)], f"{what}, argument {position}")
        elif position in moved:
            assert not np.any(np.asarray(grads[i])), f"{what}: the moved argument {position} has a nonzero gradient"


def _other_rule_pair_on_jax(jax, original, fixed) -> None:
    """A fix of another rule (`FIX_RULE`): the original raises when differentiated (the hazard is
    real), and the fixed function runs under jit, vmap, grad, jit(grad) and vmap(grad), its values
    and gradients those of the plain function `REFERENCE()` names (JAX's own derivative)."""
    import jax.numpy as jnp

    references = original.REFERENCE()
    for path, args in original.EXAMPLE_ARGS().items():
        assert all(_is_array(a) for a in args), f"{path}: give every argument as an array"
        old_f, new_f, ref_f = _lookup(original, path), _lookup(fixed, path), references[path]
        every = list(range(len(args)))
        with pytest.raises(TypeError, match="Custom VJP bwd rule must produce"):
            jax.grad(_loss(old_f), argnums=every)(*args)
        ref_value = ref_f(*args)
        ref_grads = jax.grad(_loss(ref_f), argnums=every)(*args)
        _close(old_f(*args), ref_value, f"{path}: the original, eagerly")
        _close(new_f(*args), ref_value, f"{path}: eager")
        _close(jax.jit(new_f)(*args), ref_value, f"{path}: jit")
        stacked = [jnp.stack([v, v]) for v in args]
        _close(jax.vmap(new_f)(*stacked), jax.tree_util.tree_map(lambda r: jnp.stack([r, r]), ref_value),
               f"{path}: vmap")
        grad = jax.grad(_loss(new_f), argnums=every)
        _close(grad(*args), ref_grads, f"{path}: grad")
        _close(jax.jit(grad)(*args), ref_grads, f"{path}: jit(grad)")
        batched = jax.vmap(grad)(*stacked)
        for row in range(2):
            _close(jax.tree_util.tree_map(lambda b: b[row], batched), ref_grads, f"{path}: vmap(grad) row {row}")
