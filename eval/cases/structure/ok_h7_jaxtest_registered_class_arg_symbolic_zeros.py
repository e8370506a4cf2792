"""structure look-alike: a symbolic_zeros custom_vjp over an instance of a class registered with register_pytree_node; bwd returns an instance of that class as its cotangent.

Source: jax-ml/jax tests/custom_api_test.py, `CustomVJPTest.test_symbolic_zero_custom_vjp_custom_pytree`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L2986-L3046
(read at commit cec06d1): a registered `Box` pytree is the first argument of a custom_vjp defined
with `symbolic_zeros=True`; fwd strips the per-leaf perturbation wrappers with
`jax.custom_derivatives.custom_vjp_primal_tree_values` before calling the primal and saving the
residuals. Here an affine map held in a plain class (registered with functional flatten/unflatten)
whose bwd builds the parameters' cotangent as another instance of the class.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import custom_vjp_primal_tree_values

EVAL = {
    "id": "structure/ok_h7_jaxtest_registered_class_arg_symbolic_zeros", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:tests/custom_api_test.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L2986-L3046",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1, 2), "heldout": True,
}


class Affine:
    def __init__(self, scale, shift):
        self.scale = scale
        self.shift = shift


def _affine_flatten(a):
    return (a.scale, a.shift), None


def _affine_unflatten(_, children):
    return Affine(*children)


jax.tree_util.register_pytree_node(Affine, _affine_flatten, _affine_unflatten)  # eval: span


@jax.custom_vjp  # eval: span
def apply_affine(params, x):  # eval: span
    return params.scale * x + params.shift


def _apply_affine_fwd(params, x):  # eval: span
    params, x = custom_vjp_primal_tree_values((params, x))  # eval: span
    return apply_affine(params, x), (params.scale, x)


def _apply_affine_bwd(res, g):  # eval: span
    scale, x = res
    return Affine(g * x, g), g * scale  # eval: span


apply_affine.defvjp(_apply_affine_fwd, _apply_affine_bwd, symbolic_zeros=True)  # eval: span


def eval_fn(scale, shift, x):
    return jnp.tanh(apply_affine(Affine(scale, shift), x))


def eval_inputs():
    return (np.array([1.5, -0.5, 0.8], np.float32), np.array([0.1, 0.2, -0.3], np.float32),
            np.array([0.4, 1.1, -0.9], np.float32))


def eval_reference(scale, shift, x):
    return np.tanh(np.asarray(scale, np.float64) * np.asarray(x, np.float64) + np.asarray(shift, np.float64))
