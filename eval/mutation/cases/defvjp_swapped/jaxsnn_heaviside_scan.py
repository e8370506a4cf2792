"""jaxsnn: a spike threshold as a bare `@custom_vjp` (imported `from jax import custom_vjp`) on a
one-parameter function; fwd saves a 1-tuple `(x,)`, bwd unpacks it with `(x,) = res` and returns
a 1-tuple `(grad,)` with the SuperSpike surrogate of fixed steepness 100. The library binds
jax.numpy as `np`. The rule is deliberately not the step's derivative (`eval_grad_reference`
gives the surrogate gradient).

Adapted from electronicvisions/jaxsnn:jaxsnn/functional/heaviside.py:5 (commit b8ce732). The
caller runs a leaky integrate-and-fire neuron over three time steps with `jax.lax.scan` (the
threshold inside the scan body, the membrane reset by the spike and the spike not differentiated
through the reset, `jax.lax.stop_gradient`), as jaxsnn's LIF step functions are scanned.
"""
import functools
import jax
import jax.numpy as np
import numpy as onp
from jax import custom_vjp
EVAL = {'id': 'mutation/defvjp_swapped/jaxsnn_heaviside_scan', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxsnn', 'source': 'electronicvisions/jaxsnn:jaxsnn/functional/heaviside.py:5', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'defvjp_swapped', 'base': 'jaxsnn_heaviside_scan'}

@custom_vjp
def heaviside(x):
    return 0.5 + 0.5 * np.sign(x)

def heaviside_fwd(x):
    return (heaviside(x), (x,))

def heaviside_bwd(res, g):
    x, = res
    grad = g / (100.0 * np.abs(x) + 1.0) ** 2
    return (grad,)
heaviside.defvjp(heaviside_bwd, heaviside_fwd)

def eval_fn(w, currents):

    def step(v, i_t):
        v = 0.7 * v + w * i_t
        z = heaviside(v - 1.0)
        return (v * (1.0 - jax.lax.stop_gradient(z)), z)
    _, spikes = jax.lax.scan(step, np.zeros_like(w), currents)
    return np.sum(spikes, axis=0)

def eval_inputs():
    w = onp.array([1.3, 0.6, 2.1], onp.float32)
    currents = onp.array([0.5, 0.9, 0.7], onp.float32)
    return (w, currents)

def _run(w, currents):
    w = onp.asarray(w, onp.float64)
    v = onp.zeros_like(w)
    dv = onp.zeros_like(w)
    spikes, grads = (onp.zeros_like(w), onp.zeros_like(w))
    for i_t in onp.asarray(currents, onp.float64):
        v, dv = (0.7 * v + w * i_t, 0.7 * dv + i_t)
        z = 0.5 + 0.5 * onp.sign(v - 1.0)
        spikes = spikes + z
        grads = grads + dv / (100.0 * onp.abs(v - 1.0) + 1.0) ** 2
        v, dv = (v * (1.0 - z), dv * (1.0 - z))
    return (spikes, grads)

def eval_reference(w, currents):
    return _run(w, currents)[0]

def eval_grad_reference(w, currents):
    return (_run(w, currents)[1],)
