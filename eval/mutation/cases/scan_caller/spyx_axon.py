"""spyx: a spiking activation built by a factory. `Axon(bwd, fwd)` defines a `@jax.custom_vjp`
function `f(U)` inside itself whose primal is the forward activation (a Heaviside step), whose fwd
saves the membrane potential `U` itself as the residual (a bare array, not a tuple), and whose bwd
multiplies the cotangent by the surrogate gradient `bwd(U)` and returns it in a 1-tuple; the
factory returns `jax.jit(f)`. Here the surrogate is spyx's SuperSpike, `1 / (1 + k|U|)^2` (k=25),
so the rule is deliberately not the step's derivative (`eval_grad_reference` gives the surrogate
gradient).

Adapted from kmheckel/spyx:spyx/axn.py:186 (commit 0895a0c, `Axon` at :166 and `superspike` above
it; the haiku module around it is dropped). The caller is one leaky integrate-and-fire layer step:
a weighted input current, a membrane update, and the spike count read out with fixed weights.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/scan_caller/spyx_axon', 'family': 'mutation', 'expect': 'unknown', 'library': 'spyx', 'source': 'kmheckel/spyx:spyx/axn.py:186', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'scan_caller', 'base': 'spyx_axon'}

def superspike(k=25):

    def g(x):
        return 1 / (1 + k * jnp.abs(x)) ** 2
    return jax.jit(g)

def Axon(bwd=jax.jit(lambda x: 1), fwd=jax.jit(lambda x: jnp.heaviside(x, 0))):
    """Fuse a forward activation and a surrogate gradient into one function."""

    @jax.custom_vjp
    def f(U):
        return fwd(U)

    def f_fwd(U):
        return (f(U), U)

    def f_bwd(U, grad):
        return (grad * bwd(U),)
    f.defvjp(f_fwd, f_bwd)
    return jax.jit(f)
spike = Axon(superspike())
_READOUT = np.array([0.5, -1.0, 2.0, 0.25], np.float32)

def eval_fn(w, v):
    current = jnp.tanh(w) * 1.5
    U = 0.9 * v + current - 1.0
    return spike(U) * _READOUT

def eval_inputs():
    w = np.array([0.4, -0.3, 1.1, 0.8], np.float32)
    v = np.array([0.7, 0.2, 0.3, -0.4], np.float32)
    return (w, v)

def _potential(w, v):
    return 0.9 * np.asarray(v, np.float64) + np.tanh(np.asarray(w, np.float64)) * 1.5 - 1.0

def eval_reference(w, v):
    return np.heaviside(_potential(w, v), 0.0) * _READOUT

def eval_grad_reference(w, v):
    U = _potential(w, v)
    s = 1.0 / (1.0 + 25.0 * np.abs(U)) ** 2 * _READOUT
    w = np.asarray(w, np.float64)
    return (s * 1.5 * (1.0 - np.tanh(w) ** 2), s * 0.9)

def scan_usage(*args):

    def loss(*a):

        def body(carry, _):
            return (carry + jnp.sum(eval_fn(*a)), None)
        total, _ = jax.lax.scan(body, jnp.float32(0.0), None, length=2)
        return total
    return jax.grad(loss, argnums=(0, 1))(*args)

def eval_custom():
    args = tuple(eval_inputs())
    return {'scan_usage': lambda: (scan_usage(*args), tuple((2.0 * g for g in jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args))))}
