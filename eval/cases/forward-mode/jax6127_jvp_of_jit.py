"""forward-mode hazard: jax.jvp of a jitted custom_vjp function.

Report: jax-ml/jax#6127 https://github.com/jax-ml/jax/pull/6127 ("Fix error when running a jvp of
a jit of a custom_vjp": the crash became "can't apply forward-mode autodiff (jvp) to a custom_vjp
function"). It still fails; only the message improved.
"""
import jax
import numpy as np

EVAL = {
    "id": "forward-mode/jax6127_jvp_of_jit", "family": "forward-mode", "expect": "hazard",
    "source": "jax-ml/jax#6127", "url": "https://github.com/jax-ml/jax/pull/6127",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_vjp
def cube(x):
    return x ** 3


def cube_fwd(x):
    return x ** 3, x


def cube_bwd(x, g):
    return (3 * x ** 2 * g,)


cube.defvjp(cube_fwd, cube_bwd)
cube_jit = jax.jit(cube)


def eval_fn(x):
    return cube_jit(x)


def directional(x, v):
    return jax.jvp(cube_jit, (x,), (v,))  # eval: span


def eval_inputs():
    return (np.float32(3.0),)


def eval_reference(x):
    return np.float64(x) ** 3
