"""method look-alike: `nn.custom_vjp` built inside a linen Module's `__call__`.

Report: google/flax#1738 https://github.com/google/flax/pull/1738 (the PR that added the lifted
custom_vjp to linen; its docstring's example gives a Dense layer sign-only parameter gradients).
A custom derivative inside a method is the hazard `jax.custom_vjp` on `self` has, but the lifted
transform takes the submodule as its first argument and returns the variables' and inputs'
cotangents from a pullback kept as the residual. Here the input's gradient is exact, which is what
the checks differentiate.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_ho_flax1738_linen_custom_vjp_in_call", "family": "method", "expect": "ok",
    "source": "google/flax#1738", "url": "https://github.com/google/flax/pull/1738",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


class SignGradDense(nn.Module):
    @nn.compact
    def __call__(self, x):
        def apply(mdl, v):
            return jnp.tanh(mdl(v))

        def forward(mdl, v):
            return nn.vjp(apply, mdl, v)

        def backward(pullback, y_bar):
            params_bar, *inputs_bar = pullback(y_bar)
            return (jax.tree_util.tree_map(jnp.sign, params_bar), *inputs_bar)

        wrapped = nn.custom_vjp(apply, forward_fn=forward, backward_fn=backward)
        return wrapped(nn.Dense(1), x).reshape(())


MODEL = SignGradDense()
VARIABLES = MODEL.init(jax.random.key(0), jnp.ones((3,)))
KERNEL = np.asarray(VARIABLES["params"]["Dense_0"]["kernel"], np.float64)
BIAS = np.asarray(VARIABLES["params"]["Dense_0"]["bias"], np.float64)


def eval_fn(x):
    return MODEL.apply(VARIABLES, x)


def eval_inputs():
    return (np.array([0.3, -0.8, 1.1], np.float32),)


def eval_reference(x):
    return np.tanh(np.asarray(x, np.float64) @ KERNEL + BIAS).reshape(())
