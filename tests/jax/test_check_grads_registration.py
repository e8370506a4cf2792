"""check-grads on a custom derivative whose own definition raises: the statement that creates it
or registers its rules fails when it runs (`defvjp` on a custom_jvp, `defjvp` on what `jax.jit`
returned, `defvjp(..., nondiff_argnums=...)`), at import or inside a factory a test calls. That
is the definition's failure (JAX raises for it), reported on its `def`, not "not checked: the
module cannot be imported" or "cannot reach it" (heldout3's and heldout4's `creator_swapped`,
`jit_over_creator`, `nondiff_to_registration` and `remat_symbolic_zeros` mutants, issue #44). An
import or a test failing anywhere else still says nothing about the rules. Real JAX on CPU, real
pytest, through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

SWAPPED = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


def log1pexp_fwd(x):
    return log1pexp(x), x


def log1pexp_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)  # WRONG: a custom_jvp has no defvjp
'''

JITTED = '''\
import jax
import jax.numpy as jnp


@jax.jit
@jax.custom_vjp
def cube(x):
    return x ** 3


cube.defvjp(lambda x: (cube(x), x),  # WRONG: `cube` is what jax.jit returned
            lambda x, g: (3 * x ** 2 * g,))
'''

# Silent: the module fails at an import that has nothing to do with its custom derivative.
MISSING = '''\
import jax
import jax.numpy as jnp

import vjplint_test_no_such_dependency  # noqa: F401


@jax.custom_vjp
def double(x):
    return 2 * x


double.defvjp(lambda x: (double(x), None), lambda _, g: (2.0 * g,))
'''


@pytest.mark.jax
def test_a_registration_that_raises_at_import_fails_on_its_def(tmp_path: Path) -> None:
    (tmp_path / "swapped.py").write_text(SWAPPED)
    (tmp_path / "jitted.py").write_text(JITTED)
    (tmp_path / "missing.py").write_text(MISSING)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", ".", cwd=tmp_path,
                   env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "jitted.py:6:2: VJP501 `cube`: JAX raises when the definition or its rules are registered (line 11, at "
        "import): AttributeError: 'jaxlib._jax.PjitFunction' object has no attribute 'defvjp' (what `jax.jit` "
        "returns has no rule methods: register the rules on the custom_vjp/custom_jvp object, then jit it)")
    assert lines[1].startswith("missing.py:7:2: VJP509 `double` not checked: the module cannot be imported at "
                               "line 4: ModuleNotFoundError: No module named 'vjplint_test_no_such_dependency'"), lines
    assert lines[2] == (
        "swapped.py:5:2: VJP502 `log1pexp`: JAX raises when the definition or its rules are registered (line 18, at "
        "import): AttributeError: 'function' object has no attribute 'defvjp' (a custom_jvp takes its rule with "
        "`defjvp`; `defvjp` is a custom_vjp's)")
    assert ": 0 passed, 2 failed, 1 not checked." in proc.stdout


FACTORY = '''\
import jax
import jax.numpy as jnp


def make_scaled(scale):
    @jax.custom_vjp
    def scaled(x):
        return scale * jnp.sin(x)

    scaled.defjvp(lambda primals, tangents: (scaled(*primals), scale * jnp.cos(primals[0]) * tangents[0]))
    return scaled  # WRONG above: a custom_vjp takes defvjp


def make_shifted(shift):
    @jax.custom_jvp
    def shifted(x):
        return jnp.exp(x + shift)

    shifted.defjvps(lambda t, ans, x: ans * t)
    return shifted


def make_cubed():
    @jax.custom_jvp
    @jax.jit
    def cubed(x):
        return x ** 3

    cubed.defjvps(lambda t, ans, x: 3 * x ** 2 * t)
    return cubed
'''
TESTS = '''\
import jax.numpy as jnp

from pkg.ops import make_cubed, make_scaled, make_shifted


def test_scaled():
    assert make_scaled(2.0)(jnp.array([0.5])).shape == (1,)


def test_shifted_then_fails_for_its_own_reason():
    assert make_shifted(0.5)(jnp.array([0.25, -1.0])).shape == (2,)
    assert False, "a test failing after the call says nothing about the rule"


def test_cubed():
    assert make_cubed()(jnp.array([0.5, 2.0])).shape == (2,)
'''


@pytest.mark.jax
def test_a_factory_whose_registration_raises_in_the_run_fails_and_a_jitted_primal_is_reached(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(FACTORY)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(TESTS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--output-format", "concise", "--show-checks", "pkg", "--record", "--",
                   sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=tmp_path,
                   env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 failed, 1 passed" in proc.stderr  # the tests' own outcome, untouched
    out = proc.stdout
    # Fires: made inside a factory the test called, whose registration raised there (nothing was called).
    assert "pkg/ops.py:6:6: VJP501 `scaled`: JAX raises when the definition or its rules are registered (line 10, " \
           "where the project's run called it): AttributeError: 'function' object has no attribute 'defjvp' (a " \
           "custom_vjp takes its rules with `defvjp`; `defjvp` is a custom_jvp's)" in out, out
    # Silent: its test failed after the call, at the test's own line, not at a registration.
    assert "pkg/ops.py:15: shifted (custom_jvp): passed at 1 recorded call" in out, out
    # A primal jitted beneath the creator is still found by its definition, and checked where it ran.
    assert "pkg/ops.py:24: cubed (custom_jvp): passed at 1 recorded call" in out, out
    assert "\ncoverage: 3 under the paths, 3 called by the run, 3 checked, 2 passed (2 recorded calls checked), " \
           "1 failed, 0 not checked, 0 never called\n" in out, out
