# Pattern (a test-suite check): the rules record which kinds of values they were traced with.
# Types and abstract values are static, so storing them leaks nothing.
import jax
import jax.numpy as jnp

seen = {}


@jax.custom_vjp
def square(x):
    return x * x


def square_fwd(x):
    seen["fwd"] = type(x), jax.typeof(x)
    return x * x, x


def square_bwd(x, g):
    seen["bwd"] = (type(g), g.shape, g.dtype)
    return (2 * x * g,)


square.defvjp(square_fwd, square_bwd)


def test_tracer_kinds():
    jax.jit(jax.grad(lambda x: jnp.sum(square(x))))(jnp.ones(2))
    assert seen["bwd"][1] == (2,)
