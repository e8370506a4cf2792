"""closure hazard: a layer's `__call__` defines a custom_vjp that reads the layer's parameter through `self`; the loss builds the layer from the parameter it differentiates.

Report: google/flax#1907 https://github.com/google/flax/issues/1907 ("Expand lifted custom VJP": the
reporter's custom-gradient function closed over the model variables and they could not get
parameter cotangents out of it; the maintainer's answer was to make the parameters explicit
inputs/outputs of the forward function). Here without flax: a plain class holding `beta`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/flax1907_method_inner_vjp_self_param", "family": "closure", "expect": "hazard",
    "source": "google/flax#1907", "url": "https://github.com/google/flax/issues/1907",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit", "value_and_grad"],
}


class SmoothRelu:
    def __init__(self, beta):
        self.beta = beta

    def __call__(self, x):
        @jax.custom_vjp  # eval: span
        def act(v):  # eval: span
            return jnp.logaddexp(self.beta * v, 0.0) / self.beta  # eval: span

        def act_fwd(v):
            return act(v), v

        def act_bwd(v, g):
            return (jax.nn.sigmoid(self.beta * v) * g,)

        act.defvjp(act_fwd, act_bwd)
        return act(x)


def loss(beta, x):
    return jnp.sum(SmoothRelu(beta)(x))  # eval: span


loss_and_grad = jax.value_and_grad(loss)


def eval_fn(beta, x):
    return SmoothRelu(beta)(x)


def eval_inputs():
    return (np.float32(2.0), np.array([-0.5, 0.3, 1.2], np.float32))


def eval_reference(beta, x):
    b, v = np.float64(beta), np.asarray(x, np.float64)
    return np.logaddexp(b * v, 0.0) / b
