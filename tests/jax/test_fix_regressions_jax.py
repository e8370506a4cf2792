"""The two real-code failures of the residual-plus-None rewrite (issue 15), shown on JAX.

Each fixture in fixtures/fix/refuse_* below holds code the planner now refuses. The would-be
rewrite is what the tool produced before the refusal: the same file fixed with the reference that
triggers the refusal (the direct caller's, the jit's) renamed out of sight, then named back (the
rewrite never touches that reference). Running both on JAX shows what the refusal prevents.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

FIX = FIXTURES / "fix"


def _fixed(text: str, **config) -> str:
    from vjplint.settings.config import Config
    from vjplint.fixes.apply import fix_text

    result = fix_text("input.py", text, Config(**config), True)
    assert result.errors == [] and result.fixed_count > 0, "the rewrite itself must apply"
    return result.text


def _would_be(text: str, reference: str, name: str, **config) -> str:
    """The rewrite of `text` as if `name` in `reference` (one spelling in it) named nothing of the file."""
    assert text.count(reference) == 1
    hidden = reference.replace(name, name.upper())
    out = _fixed(text.replace(reference, hidden), **config)
    assert out.count(hidden) == 1
    return out.replace(hidden, reference)


def _load(tmp_path: Path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"regression_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fwd_called_directly_would_get_a_tuple(jax_cpu, tmp_path):
    jnp = jax_cpu.numpy
    source = (FIX / "refuse_fwd_called_directly" / "input.py").read_text(encoding="utf-8")
    would_be = _would_be(source, "partial(scaled_tanh_fwd,", "scaled_tanh_fwd")
    assert "return y, (y, scale)" in would_be  # the rewrite saves `scale` beside fwd's residual
    original, rewritten = _load(tmp_path, "orig", source), _load(tmp_path, "new", would_be)
    x = jnp.array([0.1, -0.2, 0.3])
    saved = original.activations(jnp.float32(2.0), x)
    assert isinstance(saved, jax_cpu.Array) and saved.shape == (3,)
    # The rewritten custom_vjp itself is fine ...
    grad = jax_cpu.grad(lambda s, v: jnp.sum(rewritten.scaled_tanh(s, v)), argnums=1)
    assert jnp.allclose(grad(jnp.float32(2.0), x), 2.0 * (1.0 - jnp.tanh(x) ** 2))
    # ... but the direct caller silently receives a tuple in place of the array.
    corrupted = rewritten.activations(jnp.float32(2.0), x)
    assert isinstance(corrupted, tuple) and len(corrupted) == 2


MODE_SOURCE = '''
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale_by_mode(mode, x):
    return x


def scale_by_mode_fwd(mode, x):
    return x, None


def _scaled(mode, g):
    return g * 2.0 if mode == "double" else g


def scale_by_mode_bwd(mode, _, g):
    return (_scaled(mode, g),)


scale_by_mode.defvjp(scale_by_mode_fwd, scale_by_mode_bwd)
scale_by_mode_jit = jax.jit(scale_by_mode, static_argnames=("mode",))
'''


# What the rewrite of MODE_SOURCE was (main at 1f3e39b, `mode` forced an array), before the planner
# followed `mode` into `_scaled`, where `mode == "double"` now refuses it too.
MODE_WOULD_BE = '''
import jax
import jax.numpy as jnp


@jax.custom_vjp
def scale_by_mode(mode, x):
    return x


def scale_by_mode_fwd(mode, x):
    return x, mode


def _scaled(mode, g):
    return g * 2.0 if mode == "double" else g


def scale_by_mode_bwd(mode, g):
    return (None, _scaled(mode, g))


scale_by_mode.defvjp(scale_by_mode_fwd, scale_by_mode_bwd)
scale_by_mode_jit = jax.jit(scale_by_mode, static_argnames=("mode",))
'''


def test_jit_static_parameter_moved_to_a_differentiable_slot_raises(jax_cpu, tmp_path):
    """`array-names` forces `mode` to be an array (as when real code was forced); jit declares it
    static, so callers pass a string, which a differentiable slot rejects. The planner now also
    refuses it for the string comparison in the helper bwd passes `mode` to."""
    from vjplint.settings.config import Config
    from vjplint.fixes.apply import fix_text

    jnp = jax_cpu.numpy
    hidden = MODE_SOURCE.replace("jax.jit(scale_by_mode,", "jax.jit(SCALE_BY_MODE,")
    result = fix_text("input.py", hidden, Config(array_names=frozenset({"mode"})), True)
    assert result.fixed_count == 0 and result.text == hidden
    original, rewritten = _load(tmp_path, "orig", MODE_SOURCE), _load(tmp_path, "new", MODE_WOULD_BE)
    x = jnp.float32(3.0)
    assert original.scale_by_mode_jit("double", x) == 3.0
    assert jax_cpu.grad(lambda v: original.scale_by_mode_jit("double", v))(x) == 2.0
    with pytest.raises(TypeError, match="Argument 'double' of type <class 'str'> is not a valid JAX type"):
        rewritten.scale_by_mode_jit("double", x)
    # A jit-static argument is always a hashable Python value, never an array: an array there fails.
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        original.scale_by_mode_jit(jnp.float32(1.0), x)


def test_jit_static_fixture_would_be_rewrite_is_untraceable_there(jax_cpu, tmp_path):
    """fixtures/fix/refuse_jit_static: through the jit, `scale` is static, so the original never
    sees a tracer there (no hazard to fix) and can only ever receive a Python value."""
    jnp = jax_cpu.numpy
    source = (FIX / "refuse_jit_static" / "input.py").read_text(encoding="utf-8")
    original = _load(tmp_path, "orig", source)
    x = jnp.array([1.0, 2.0])
    grad = jax_cpu.grad(lambda v: jnp.sum(original.scale_grad_jit(0.5, v)))(x)
    assert jnp.allclose(grad, 0.5)
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        original.scale_grad_jit(jnp.float32(0.5), x)


def _package_test(root: Path) -> None:
    """Run `clipops.test_ops`'s test as pytest would, importing the package from `root`."""
    import importlib
    import sys

    def forget() -> None:
        for name in [m for m in sys.modules if m == "clipops" or m.startswith("clipops.")]:
            del sys.modules[name]

    forget()
    sys.path.insert(0, str(root))
    try:
        importlib.import_module("clipops.test_ops").test_rules_clip_the_cotangent()
    finally:
        sys.path.remove(str(root))
        forget()


def test_rewriting_rules_another_module_calls_breaks_that_module(jax_cpu, tmp_path):
    """Issue 37: fixtures/fix_named_elsewhere. `ops.py` fixed as if alone (what `--fix` did before
    it searched the run) passes its own checks, and the package's test then fails; in a run (or
    the editor's workspace) holding the test the fix is unsafe and says why (tests/cli/test_fix_cli.py,
    tests/server/test_server_project.py)."""
    import shutil

    package = FIXTURES / "fix_named_elsewhere" / "clipops"
    for state in ("original", "rewritten"):
        shutil.copytree(package, tmp_path / state / "clipops")
    ops = tmp_path / "rewritten" / "clipops" / "ops.py"
    ops.write_text(_fixed(ops.read_text(encoding="utf-8")), encoding="utf-8")
    assert "def clip_bwd(res, g):" in ops.read_text(encoding="utf-8")
    _package_test(tmp_path / "original")
    with pytest.raises(TypeError, match=r"clip_bwd\(\) takes 2 positional arguments but 4 were given"):
        _package_test(tmp_path / "rewritten")


CLS_SOURCE = '''
import jax
import jax.numpy as jnp


class Builder:
    @classmethod
    def build(cls):
        cls.scale = jax.custom_vjp(cls._scale, nondiff_argnums=(1,))
        cls.scale.defvjp(cls._scale_fwd, cls._scale_bwd)

    @classmethod
    def _scale(cls, x, w: jax.Array):
        return jnp.sin(x) * 2.0

    @classmethod
    def _scale_fwd(cls, x, w):
        return jnp.sin(x) * 2.0, x

    @classmethod
    def _scale_bwd(cls, w, x, g):
        return (g * 2.0 * jnp.cos(x) + 0.0 * w,)


Builder.build()
'''


def test_classmethods_through_cls_count_positions_after_cls(jax_cpu, tmp_path):
    """Issue 37, positions as JAX counts them: `cls._scale` inside a classmethod binds `cls`, so
    `w` is position 1 for JAX. The verify harness cannot reach a custom_vjp made inside a method
    (`cls.scale` in `build`), so the rewrite is shown here: the original raises on a traced `w`,
    the rewrite gives the same values and derivatives (eager, jit, vmap, grad, jit(grad),
    vmap(grad)) and a zero gradient for `w`."""
    from vjplint.lint.engine import lint_source
    from vjplint.settings.config import Config

    jnp = jax_cpu.numpy
    [d] = lint_source("input.py", CLS_SOURCE, Config()).diagnostics
    assert (d.code, d.location.row, d.message.split(";")[0]) == (
        "VJP101", 13, "`w` (position 1) is in nondiff_argnums but is annotated `jax.Array`")
    fixed = _fixed(CLS_SOURCE)
    assert "cls.scale = jax.custom_vjp(cls._scale)\n" in fixed and "def _scale_bwd(cls, res, g):" in fixed
    original, rewritten = _load(tmp_path, "cls_orig", CLS_SOURCE), _load(tmp_path, "cls_new", fixed)
    x, w = jnp.array([0.3, -1.2, 2.1]), jnp.float32(0.5)
    f, g = original.Builder.scale, rewritten.Builder.scale
    with pytest.raises(jax_cpu.errors.UnexpectedTracerError):
        jax_cpu.jit(f)(x, w)  # the hazard: a traced `w` in a nondiff position
    assert jnp.allclose(jax_cpu.jit(g)(x, w), 2.0 * jnp.sin(x))  # the rewrite takes it
    summed = lambda h: (lambda v: jnp.sum(h(v)))  # noqa: E731
    for name, run in (("eager", lambda h: h(x)), ("jit", lambda h: jax_cpu.jit(h)(x)),
                      ("vmap", lambda h: jax_cpu.vmap(h)(x)), ("grad", lambda h: jax_cpu.grad(summed(h))(x)),
                      ("jit(grad)", lambda h: jax_cpu.jit(jax_cpu.grad(summed(h)))(x)),
                      ("vmap(grad)", lambda h: jax_cpu.vmap(jax_cpu.grad(h))(x))):
        # the original with `w` a Python constant (how it worked) against the rewrite with an array
        assert jnp.allclose(run(lambda v: g(v, w)), run(lambda v: f(v, 0.5))), name
    assert jnp.allclose(jax_cpu.grad(lambda v, s: jnp.sum(g(v, s)))(x, w), 2.0 * jnp.cos(x))
    assert jax_cpu.grad(lambda v, s: jnp.sum(g(v, s)), argnums=1)(x, w) == 0.0


def test_vjp307_fix_breaks_a_module_that_calls_bwd_directly(jax_cpu, tmp_path):
    """Issue 37, every fix: VJP307's fix (bwd's bare return wrapped in a tuple) is right for JAX
    (grad raised before, works after) and breaks the package's test that calls `soft_bwd` directly
    (`.shape` of a tuple): why a run holding that test makes the fix unsafe (tests/cli/test_fix_cli.py)."""
    import importlib
    import sys

    from tests.unit.test_named_elsewhere import write_softops

    for state in ("original", "rewritten"):
        (tmp_path / state).mkdir()
        write_softops(tmp_path / state)
    ops = tmp_path / "rewritten" / "softops" / "ops.py"
    ops.write_text(_fixed(ops.read_text(encoding="utf-8")), encoding="utf-8")
    assert "return (g * (1.0 - jnp.tanh(x) ** 2),)" in ops.read_text(encoding="utf-8")

    def run(state: str):
        def forget() -> None:
            for name in [m for m in sys.modules if m == "softops" or m.startswith("softops.")]:
                del sys.modules[name]
        forget()
        sys.path.insert(0, str(tmp_path / state))
        try:
            ops_module = importlib.import_module("softops.ops")
            grad = jax_cpu.grad(lambda v: ops_module.soft(v))
            try:
                g = float(grad(0.5))
            except TypeError:
                g = None
            return g, importlib.import_module("softops.test_ops").test_bwd
        finally:
            sys.path.remove(str(tmp_path / state))
            forget()

    grad_before, test_before = run("original")
    grad_after, test_after = run("rewritten")
    assert grad_before is None and abs(grad_after - (1.0 - float(jax_cpu.numpy.tanh(0.5)) ** 2)) < 1e-6
    test_before()
    with pytest.raises(AttributeError, match="'tuple' object has no attribute 'shape'"):
        test_after()
