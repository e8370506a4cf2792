"""fixtures/fix_small/<case>: the small fixes (VJP103, VJP201, VJP301, VJP306, VJP307, VJP309, VJP401, VJP402) against exact expected
text, then both sides on real JAX: the original fails (or is wrong) as the rule says, and the
rewrite runs under jit, vmap, grad, jit(grad) and vmap(grad) with the reference values and equals
the original wherever the original works.

Each input.py defines `EXAMPLE()` -> (function of arrays, example arrays), `REFERENCE(*arrays)`
-> (value, gradient of the sum with respect to the first array) and `ORIGINAL`: for "import" or a
transformation, what the original does there ("TypeError: <message part>" for an exception,
"wrong" for a silently different result); every transformation not listed must equal the fix.
`EXTRA_TRANSFORMS` (optional) adds checks beyond the five, e.g. "grad(jit)" (grad of the jitted
function, where VJP201's closures fail).
Case names are `<code>_<safe|unsafe>_<what>`. Regenerate expected.py with
`VJPLINT_UPDATE_EXPECTED=1 python -m pytest -q tests/unit/test_fix_small.py` and read the diff.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

SMALL = FIXTURES / "fix_small"
CASES = sorted(p.name for p in SMALL.iterdir() if p.is_dir())
UPDATE = bool(os.environ.get("VJPLINT_UPDATE_EXPECTED"))
TRANSFORMS = ("jit", "vmap", "grad", "jit(grad)", "vmap(grad)")
# What a fix leaves: nothing (issue 37). VJP201's rewrite returns None for a value the primal
# reads and VJP307's `(None,)` keeps a bare `None`: both deliberate zeros, which is why those fixes
# are unsafe, and both marked `# noqa: VJP602` as that rule asks for a gradient left out on purpose.
LEFT: dict = {}


def _code(case: str) -> str:
    return case.split("_", 1)[0].upper()


def _fix(text: str, unsafe: bool):
    from vjplint.settings.config import Config
    from vjplint.fixes.apply import fix_text

    return fix_text("input.py", text, Config(), unsafe)


def test_cases_cover_every_small_fix():
    assert {_code(c) for c in CASES} == {"VJP103", "VJP201", "VJP301", "VJP306", "VJP307", "VJP309", "VJP401", "VJP402"}
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
    assert [d.code for d in result.remaining] == LEFT.get(case, []), "the fix left diagnostics"
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
            "vmap(grad)": lambda: jax.vmap(loss)(*stacked)[1],
            "grad(jit)": lambda: jax.grad(lambda *a: jnp.sum(jax.jit(f)(*a)))(*args)}[transform]()


@pytest.mark.jax
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
        transforms = (*TRANSFORMS, *getattr(fixed, "EXTRA_TRANSFORMS", ()))
        assert set(expect) <= {"import", *transforms}
        results = {}
        for transform in transforms:
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
        for transform in transforms:
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


VJP301_SOURCE = """import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def f_bwd(cos_x, g):
    return (cos_x * g,)


def loss(x):
    return f(x).sum()
"""


def _vjp301_fix(source: str):
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    found = [d for d in lint_source("t.py", source, Config()).diagnostics if d.code == "VJP301"]
    assert len(found) == 1, found
    return found[0].fix


def test_vjp301_fix_goes_after_the_last_definition_and_is_unsafe():
    from vjplint.diagnostics import Applicability

    fix = _vjp301_fix(VJP301_SOURCE)
    assert fix is not None and fix.applicability is Applicability.UNSAFE
    assert fix.message == "Add `f.defvjp(f_fwd, f_bwd)`"
    assert _fix(VJP301_SOURCE, unsafe=False).text == VJP301_SOURCE
    out = _fix(VJP301_SOURCE, unsafe=True).text
    assert "    return (cos_x * g,)\n\nf.defvjp(f_fwd, f_bwd)\n\n\ndef loss(x):" in out
    # Rules defined before the primal: the line goes after the primal; in a function, indented.
    reordered = VJP301_SOURCE.replace("@jax.custom_vjp\ndef f(x):\n    return jnp.sin(x)\n\n\n", "") \
        .replace("def loss(x):", "@jax.custom_vjp\ndef f(x):\n    return jnp.sin(x)\n\n\ndef loss(x):")
    assert "    return jnp.sin(x)\n\nf.defvjp(f_fwd, f_bwd)\n\n\ndef loss(x):" in _fix(reordered, unsafe=True).text
    nested = "import jax\n\ndef make():\n    @jax.custom_vjp\n    def f(x):\n        return x\n" \
             "    def f_fwd(x):\n        return x, None\n    def f_bwd(_, g):\n        return (g,)\n    return f(1.0)\n"
    assert "        return (g,)\n\n    f.defvjp(f_fwd, f_bwd)\n    return f(1.0)\n" in _fix(nested, unsafe=True).text
    # At the end of the file (the file's last newline stays last).
    at_end = VJP301_SOURCE.replace("\n\ndef loss(x):\n    return f(x).sum()\n", "") \
        .replace("def f_fwd(x):", "def loss(x):\n    return f(x).sum()\n\n\ndef f_fwd(x):")
    assert _fix(at_end, unsafe=True).text.endswith("    return (cos_x * g,)\n\nf.defvjp(f_fwd, f_bwd)\n")
    # A module-level call after the definitions: the new line comes before it.
    call_after = VJP301_SOURCE.replace("def loss(x):\n    return f(x).sum()\n", "y = f(1.0)\n")
    assert "    return (cos_x * g,)\n\nf.defvjp(f_fwd, f_bwd)\n\n\ny = f(1.0)\n" in _fix(call_after, unsafe=True).text


@pytest.mark.parametrize("old, new", [
    ("def f_fwd(x):", "def f_fwd(x, y):"),  # fwd takes the primal's parameters
    ("def f_bwd(cos_x, g):", "def f_bwd(g):"),  # bwd takes residuals and cotangent
    ("def f_bwd(cos_x, g):", "def f_bwd(*args):"),
    ("def f_fwd(x):", "def make_fwd(x):"),  # no rule named after the primal
    ("def f_bwd(cos_x, g):", "@staticmethod\ndef f_bwd(cos_x, g):"),
    ("def loss(x):\n    return f(x).sum()\n", "y = f(1.0)\n\n\ndef f_bwd(c, g):\n    return (g,)\n"),  # bwd bound twice
])
def test_vjp301_no_fix_unless_the_rules_are_certain(old, new):
    source = VJP301_SOURCE.replace(old, new)
    assert source != VJP301_SOURCE
    assert _vjp301_fix(source) is None


def test_vjp301_no_fix_when_called_at_module_level_before_a_rule_or_in_another_block():
    early = VJP301_SOURCE.replace("def f_bwd(cos_x, g):", "y = f(1.0)\n\n\ndef f_bwd(cos_x, g):")
    assert _vjp301_fix(early) is None
    split = VJP301_SOURCE.replace("def f_bwd(cos_x, g):\n    return (cos_x * g,)\n",
                                  "if True:\n    def f_bwd(cos_x, g):\n        return (cos_x * g,)\n")
    assert _vjp301_fix(split) is None


@pytest.mark.jax
def test_vjp201_unsafe_fix_zero_gradient_for_the_captured_value(jax_cpu):
    """Why VJP201's fix is unsafe when the primal reads the value: differentiating with respect to
    it raised in the original (JAX refuses a closed-over value), and the rewrite, whose bwd returns
    None for it, gives 0 where the true derivative (sin(x) here) is not."""
    import numpy as np

    case = SMALL / "vjp201_unsafe_primal_reads"
    original = _load(case / "input.py", "small_original_vjp201_c")
    fixed = _load(case / "expected.py", "small_fixed_vjp201_c")
    x, c = original.EXAMPLE()[1]
    wrt_c = lambda m: jax_cpu.grad(lambda c_: jax_cpu.numpy.sum(m.scaled_sin_loss(x, c_)))(c)  # noqa: E731
    with pytest.raises(Exception, match="closed-over value|UnexpectedTracerError|Tracer") as info:
        wrt_c(original)
    assert type(info.value).__name__ in ("CustomVJPException", "UnexpectedTracerError"), repr(info.value)
    np.testing.assert_array_equal(np.asarray(wrt_c(fixed)), np.zeros(3))
    assert not np.allclose(np.sin(np.asarray(x)), 0.0)


def test_vjp201_fix_needs_an_array_value_and_every_call_inside():
    """No fix when the custom_vjp escapes (passed on or stored: its callers cannot be given the
    value), or when the value is an object or `self` (an argument must be a pytree of arrays);
    the rules-only case is safe."""
    from vjplint.diagnostics import Applicability

    base = (SMALL / "vjp201_safe_rules_only" / "input.py").read_text(encoding="utf-8")

    def fix_of(source):
        from vjplint.settings.config import Config
        from vjplint.lint.engine import lint_source

        found = [d for d in lint_source("t.py", source, Config()).diagnostics if d.code == "VJP201"]
        assert len(found) == 1, found
        return found[0].fix

    assert fix_of(base).applicability is Applicability.SAFE
    escaped = base.replace("    return clip_grad(x) * 2.0\n", "    return jax.vmap(clip_grad)(x) * 2.0\n")
    assert fix_of(escaped) is None
    stored = base.replace("    return clip_grad(x) * 2.0\n", "    table = {'f': clip_grad}\n    return table['f'](x)\n")
    assert fix_of(stored) is None
    for fixture in ("fire_object_built_from_param.py", "fire_method_reads_self.py"):  # not arrays: no fix
        assert fix_of((FIXTURES / "rules" / "VJP201" / fixture).read_text(encoding="utf-8")) is None


@pytest.mark.jax
def test_vjp201_unsafe_jvp_fix_zero_derivative_for_the_value(jax_cpu):
    """The custom_jvp form, when the primal reads the value: differentiated with respect to it, the
    original raises (a closed-over tracer) and the rewrite, whose jvp rule ignores the value's
    tangent, gives 0 where the true derivative of s * tanh(x / s) in s is not 0."""
    import numpy as np

    case = SMALL / "vjp201_unsafe_jvp_primal_reads"
    original = _load(case / "input.py", "small_original_vjp201_jvp")
    fixed = _load(case / "expected.py", "small_fixed_vjp201_jvp")
    x, s = original.EXAMPLE()[1]
    wrt_s = lambda m: jax_cpu.grad(lambda s_: jax_cpu.numpy.sum(m.soft_clip(x, s_)))(s)  # noqa: E731
    with pytest.raises(Exception, match="Tracer") as info:
        wrt_s(original)
    assert type(info.value).__name__ == "UnexpectedTracerError", repr(info.value)
    np.testing.assert_array_equal(np.asarray(wrt_s(fixed)), np.zeros(3))
    true = np.tanh(np.asarray(x) / np.asarray(s)) - np.asarray(x) / np.asarray(s) / np.cosh(np.asarray(x) / np.asarray(s)) ** 2
    assert not np.allclose(true, 0.0)


@pytest.mark.parametrize("old, new", [
    ("(v,), (t,) = primals, tangents", "v, t = primals[0], tangents[0]"),  # not unpacked into tuples
    ("(v,), (t,) = primals, tangents", "(v,), (t,) = primals, tangents\n        _ = t\n        t = _"),  # `_` is read
    ("    return g(x) * 2.0\n", "    return jax.vmap(g)(x) * 2.0\n"),  # passed on: callers cannot be given it
    ("    @jax.custom_jvp\n", "    @partial(jax.custom_jvp, nondiff_argnums=(0,))\n"),
])
def test_vjp201_jvp_fix_needs_plain_unpacking_and_every_call_inside(old, new):
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    base = (SMALL / "vjp201_safe_jvp_rules_only" / "input.py").read_text(encoding="utf-8")
    source = base.replace(old, new).replace("import jax\n", "from functools import partial\n\nimport jax\n", 1)
    assert source != base
    found = [d for d in lint_source("t.py", source, Config()).diagnostics if d.code == "VJP201"]
    assert found and all(d.fix is None for d in found)
    [safe] = [d for d in lint_source("t.py", base, Config()).diagnostics if d.code == "VJP201"]
    assert safe.fix is not None and safe.fix.message == ("Pass `scale` to `g` as an explicit argument (the jvp "
                                                         "rule ignores its tangent)")
