"""A test helper registers rules with a method chosen by name, and a newer registration
method with a suffix is used elsewhere: none of it is visible as `f.defvjp(...)`."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def double(x):
    return 2.0 * x


@jax.custom_vjp
def triple(x):
    return 3.0 * x


def _register(fn, scale, method="defvjp"):
    getattr(fn, method)(lambda x: (fn(x), None), lambda _, g: (scale * g,))


_register(double, 2.0)


def use_logged_rules():
    triple.defvjp_with_logs(lambda x: (triple(x), None), lambda _, g: ((3.0 * g,), None))


def loss(x):
    return jnp.sum(double(x) + triple(x))
