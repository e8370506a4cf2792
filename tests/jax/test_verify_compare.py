"""`Verifier.compare`, the comparison every verify check ends in, on real JAX values: arrays by
shape, dtype and value; anything else returned beside them (a function, a module object) by its
type, since its identity differs per call (VJP103's nnx fixture returns the custom function it
makes: compared by identity, the original and its own rewrite "differed")."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.jax


@pytest.fixture(scope="module")
def verifier():
    import jax
    import numpy as np

    from vjplint.verify.verifier import Verifier

    v = Verifier.__new__(Verifier)  # compare reads only the libraries, not a plan
    v.jax, v.np = jax, np
    return v


def test_functions_beside_the_values_are_compared_by_type(verifier) -> None:
    import jax.numpy as jnp

    def made_once(x):
        return x

    def made_again(x):
        return x

    ok, worst, detail = verifier.compare((jnp.ones(3), made_once), (jnp.ones(3), made_again))
    assert (ok, worst, detail) == (True, 0.0, "")


def test_a_function_where_a_value_was_expected_fails_with_its_place(verifier) -> None:
    import jax.numpy as jnp

    ok, worst, detail = verifier.compare((jnp.ones(3), len), (jnp.ones(3), 2.0))
    assert (ok, worst) == (False, None)
    assert detail == "the output[1] is a builtin_function_or_method, expected a float"


def test_values_still_compared_by_value_shape_and_dtype(verifier) -> None:
    import jax.numpy as jnp

    ok, worst, detail = verifier.compare((jnp.array([1.0, 2.5]), abs), (jnp.array([1.0, 2.0]), abs))
    assert ok is False and worst == pytest.approx(0.5)
    assert detail == "the output[0][1] is 2.5, expected 2 (max error 0.5, tolerance 1e-06)"
    ok, _, detail = verifier.compare(jnp.ones(2), jnp.ones(3))
    assert (ok, detail) == (False, "the output has shape (2,), expected (3,)")
    ok, _, detail = verifier.compare(jnp.ones(2, dtype=jnp.int32), jnp.ones(2))
    assert (ok, detail) == (False, "the output has dtype int32, expected float32")
    ok, _, detail = verifier.compare((jnp.ones(2),), [jnp.ones(2)])
    assert ok is False and detail.startswith("the result's structure PyTreeDef((*,)) differs from the expected")
