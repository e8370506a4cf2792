"""ExoJAX: the rigid-rotation broadening kernel with quadratic limb darkening, `rotkernel(x, u1, u2)`,
as a bare `@custom_jvp` (imported by name from jax) over three differentiable inputs, the rule
registered with `@rotkernel.defjvp`, unpacking `x, u1, u2 = primals` and `ux, uu1, uu2 = tangents`,
calling the function again for the primal output, and returning one tangent built as a sum of
three partials times their tangents; every branch is a `jnp.where` on `x * x <= 1`.

Adapted from HajimeKawahara/exojax:src/exojax/spec/spin_rotation.py:63 (commit ef541ef). Changed:
the library's partial in x has `+ 8.0 * x * u2 * sqrt(1 - x2)` where the derivative of
`-2/3 sqrt(1 - x2) (... + 2 u2 x2)` gives `- 8/3 * x * u2 * sqrt(1 - x2)`; the library's default
`u2=0.0` hides the difference, and this base (with u2 != 0) uses the true partial, so that the base is
correct. The caller follows the library's `convolve_rigid_rotation`: the kernel on `vr / vsini`,
normalised to unit sum, convolved ("same") with a fixed spectrum (`jnp.convolve` for exojax's
`convolve_same`); the velocity grid reaches past `vsini`, where the kernel and its partials are 0.
"""
import functools
import jax
import jax.numpy as jnp
import numpy
from jax import custom_jvp
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/exojax_rotkernel', 'family': 'mutation', 'expect': 'unknown', 'library': 'exojax', 'source': 'HajimeKawahara/exojax:src/exojax/spec/spin_rotation.py:63', 'argnums': (0, 1, 2, 3), 'extra': ['jvp', 'jacfwd'], 'operator': 'host_callback_primal', 'base': 'exojax_rotkernel'}
F0 = numpy.array([1.0, 0.98, 0.95, 0.7, 0.55, 0.72, 0.96, 1.0, 0.99, 0.8, 0.93, 1.0], numpy.float32)

@custom_jvp
def rotkernel(x, u1, u2):
    x2 = x * x
    kernel = jnp.where(x2 <= 1.0, jnp.pi / 2.0 * u1 * (1.0 - x2) - 2.0 / 3.0 * jnp.sqrt(1.0 - x2) * (-3.0 + 3.0 * u1 + u2 + 2.0 * u2 * x2), 0.0)
    _out = kernel
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

@rotkernel.defjvp
def rotkernel_jvp(primals, tangents):
    x, u1, u2 = primals
    ux, uu1, uu2 = tangents
    x2 = x * x
    dHdx = jnp.where(x2 <= 1.0, -jnp.pi * x * u1 + 2.0 / 3.0 * x / jnp.sqrt(1.0 - x2) * (-3.0 + 3.0 * u1 + u2 + 2.0 * u2 * x2) - 8.0 / 3.0 * x * u2 * jnp.sqrt(1.0 - x2), 0.0)
    dHdu1 = jnp.where(x2 <= 1.0, -2.0 * jnp.sqrt(1.0 - x2) + jnp.pi / 2.0 * (1.0 - x2), 0.0)
    dHdu2 = jnp.where(x2 <= 1.0, -2.0 * (1.0 + 2.0 * x2) * jnp.sqrt(1.0 - x2) / 3.0, 0.0)
    primal_out = rotkernel(x, u1, u2)
    tangent_out = dHdx * ux + dHdu1 * uu1 + dHdu2 * uu2
    return (primal_out, tangent_out)

def convolve_rigid_rotation(F0, vr_array, vsini, u1=0.0, u2=0.0):
    kernel = rotkernel(vr_array / vsini, u1, u2)
    kernel = kernel / jnp.sum(kernel, axis=0)
    return jnp.convolve(F0, kernel, mode='same')

def eval_fn(vr_array, vsini, u1, u2):
    return convolve_rigid_rotation(jnp.asarray(F0), vr_array, vsini, u1, u2)

def eval_inputs():
    vr = numpy.array([-1.6, -1.0, -0.5, -0.1, 0.3, 0.7, 1.05, 1.7], numpy.float32)
    return (vr, numpy.float32(1.3), numpy.float32(0.4), numpy.float32(0.25))

def eval_reference(vr_array, vsini, u1, u2):
    x = numpy.asarray(vr_array, numpy.float64) / numpy.float64(vsini)
    u1, u2 = (numpy.float64(u1), numpy.float64(u2))
    x2 = x * x
    inside = x2 <= 1.0
    s = numpy.sqrt(numpy.where(inside, 1.0 - x2, 0.0))
    kernel = numpy.where(inside, numpy.pi / 2.0 * u1 * (1.0 - x2) - 2.0 / 3.0 * s * (-3.0 + 3.0 * u1 + u2 + 2.0 * u2 * x2), 0.0)
    kernel = kernel / numpy.sum(kernel)
    return numpy.convolve(F0.astype(numpy.float64), kernel, mode='same')
