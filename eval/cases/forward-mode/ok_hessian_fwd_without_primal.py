"""forward-mode look-alike: `jax.hessian` of a custom_vjp whose fwd does not call the primal.

Source: jax-ml/jax#16049 https://github.com/jax-ml/jax/issues/16049 (hessian of a custom_vjp):
hessian is jacfwd over jacrev; the outer forward pass goes through fwd and bwd, which are plain
JAX code here, so it works. The failing form is a fwd that calls the custom_vjp function itself.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/ok_hessian_fwd_without_primal", "family": "forward-mode", "expect": "ok",
    "source": "jax-ml/jax#16049", "url": "https://github.com/jax-ml/jax/issues/16049",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["hessian"],
}


@jax.custom_vjp
def soft_energy(x):
    return jnp.sum(jnp.logaddexp(x, 0.0))


def soft_energy_fwd(x):
    return jnp.sum(jnp.logaddexp(x, 0.0)), jax.nn.sigmoid(x)


def soft_energy_bwd(s, g):
    return (g * s,)


soft_energy.defvjp(soft_energy_fwd, soft_energy_bwd)


def eval_fn(x):
    return soft_energy(x)


def curvature(x):
    return jax.hessian(soft_energy)(x)


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(x):
    return np.sum(np.logaddexp(np.asarray(x, np.float64), 0.0))
