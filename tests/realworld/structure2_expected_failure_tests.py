"""Test suites call custom derivatives wrongly on purpose, inside pytest.raises/assertRaises,
to check JAX's error message: those calls are not findings."""
import unittest

import jax
import jax.numpy as jnp
import pytest


@jax.custom_vjp
def scale(x, y, *, factor=None):
    return x * y


def scale_fwd(x, y):
    return x * y, (x, y)


def scale_bwd(res, g):
    x, y = res
    return g * y, g * x


scale.defvjp(scale_fwd, scale_bwd)


def test_keyword_only_is_rejected():
    with pytest.raises(TypeError, match="could not be resolved to positions"):
        scale(1.0, 2.0, factor=3.0)


class ForwardModeTest(unittest.TestCase):
    def test_jvp_is_rejected(self):
        with self.assertRaisesRegex(TypeError, "can't apply forward-mode autodiff"):
            jax.jvp(scale, (1.0, 2.0), (1.0, 0.0))

    def test_jacfwd_is_rejected(self):
        with self.assertRaises(TypeError):
            jax.jacfwd(lambda v: scale(v, 2.0))(jnp.ones(2))
