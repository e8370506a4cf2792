"""closure look-alike: a factory builds a custom_vjp around the Python function it is given; the closure holds a function, never an array.

Report: jax-ml/jax#1366 https://github.com/jax-ml/jax/issues/1366 ("nondifferentiable_argnums for
jax.custom_gradient": the reporter's working pattern was a factory
`make_f_with_custom_gradient(func)` whose inner custom-gradient function closes over `func`).
Here with `jax.custom_vjp`: a gradient-scaling wrapper around any elementwise function.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_jax1366_factory_closes_function", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#1366", "url": "https://github.com/jax-ml/jax/issues/1366",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"],
}


def with_damped_grad(func, factor=0.5):
    @jax.custom_vjp
    def damped(x):  # eval: span
        return func(x)

    def damped_fwd(x):
        out, pullback = jax.vjp(func, x)
        return out, pullback

    def damped_bwd(pullback, g):
        (x_bar,) = pullback(g)
        return (factor * x_bar,)

    damped.defvjp(damped_fwd, damped_bwd)
    return damped


damped_tanh = with_damped_grad(jnp.tanh)


def eval_fn(x):
    return damped_tanh(x)


def eval_inputs():
    return (np.array([-1.0, 0.2, 0.8], np.float32),)


def eval_reference(x):
    return np.tanh(np.asarray(x, np.float64))


def eval_grad_reference(x):
    return (0.5 * (1.0 - np.tanh(np.asarray(x, np.float64)) ** 2),)
