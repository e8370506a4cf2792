"""A second derivative of a custom_jvp whose jvp rule calls jax.pure_callback (JAX's external-callbacks
pattern). The first derivatives run; jax.hessian, jacfwd(grad), jvp(grad), grad of grad and jacrev(jacrev) raise
`ValueError: Pure callbacks do not support JVP` (the second derivative differentiates the jvp rule)."""
import numpy as np
import jax
import jax.numpy as jnp


def _host_sin(x):
    return np.sin(x).astype(np.float32)


def _host_cos(x):
    return np.cos(x).astype(np.float32)


@jax.custom_jvp
def hsin(x):
    return jax.pure_callback(_host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="broadcast_all")


@hsin.defjvp
def hsin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jax.pure_callback(_host_cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="broadcast_all")
    return hsin(x), slope * t


def loss(x):
    return jnp.sum(hsin(x))


X = jnp.array([0.1, 0.5, 1.0], jnp.float32)
jax.grad(loss)(X)
jax.jvp(loss, (X,), (jnp.ones(3),))
for name, second in [("hessian", lambda: jax.hessian(loss)(X)),
                     ("jacfwd(grad)", lambda: jax.jacfwd(jax.grad(loss))(X)),
                     ("jvp(grad)", lambda: jax.jvp(jax.grad(loss), (X,), (jnp.ones(3),))),
                     ("grad(grad)", lambda: jax.grad(lambda x: jnp.sum(jax.grad(loss)(x)))(X)),
                     ("jacrev(jacrev)", lambda: jax.jacrev(jax.jacrev(loss))(X))]:
    try:
        second()
    except ValueError as e:
        assert "Pure callbacks do not support JVP" in str(e), e
        print(name, "raises:", str(e).splitlines()[0])
    else:
        raise AssertionError(name + " ran")
