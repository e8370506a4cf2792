"""nondiff-array hazard: `jax.checkpoint` beneath the creator traces a nondiff function that only bwd uses.

Source: acfr/RobustNeuralNetworks https://github.com/acfr/RobustNeuralNetworks (`ren_base.py`: an
implicit-function-theorem gradient whose custom_vjp takes the activation as a nondiff argument and
gives it to `jax.vjp` in bwd). With the primal rematerialised by `@jax.checkpoint` beneath the
creator, JAX passes every argument to checkpoint, the activation too: "Cannot interpret value of
type ... as an abstract array".
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/e65_checkpoint_callable_used_in_bwd", "family": "nondiff-array",
    "expect": "hazard", "source": "acfr/RobustNeuralNetworks", "url": "https://github.com/acfr/RobustNeuralNetworks",
    "written_at": "2026-12-07", "written_at_commit": "7929f7c7a7cd3de25b6e41c92a8e1e8a1d3df93f",
    "argnums": (0,),
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
@jax.checkpoint  # eval: span
def equilibrium_grad(activation, v, w_eq):
    return w_eq


def _fwd(activation, v, w_eq):
    return w_eq, v


def _bwd(activation, v, g):
    _, pullback = jax.vjp(activation, v)
    (dv,) = pullback(g)
    return dv, g


equilibrium_grad.defvjp(_fwd, _bwd)


def eval_fn(v):
    w_eq = jax.lax.stop_gradient(jnp.tanh(v))
    return equilibrium_grad(jnp.tanh, v, w_eq)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32),)


def eval_reference(v):
    return np.tanh(np.asarray(v, np.float64))


def eval_grad_reference(v):
    v = np.asarray(v, np.float64)
    return (1.0 - np.tanh(v) ** 2,)
