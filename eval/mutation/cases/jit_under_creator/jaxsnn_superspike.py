"""jaxsnn: the SuperSpike surrogate gradient as a decorated `@jax.custom_vjp` with a defaulted
second parameter `alpha=80`; fwd saves `(x, alpha)` as residuals, bwd scales the cotangent by
`1 / (alpha |x| + 1)^2` and returns `(grad, None)` (no gradient for alpha). The library binds
jax.numpy as `np`, as here. The primal is the Heaviside step `0.5 + 0.5 sign(x)`, so the rule is
deliberately not its derivative (`eval_grad_reference` gives the surrogate gradient).

Adapted from electronicvisions/jaxsnn:jaxsnn/functional/threshold.py:14 (commit 4b10b4f). The
caller is a two-step leaky integrate-and-fire neuron layer driven by a weighted input (spikes
of step one reset the membrane before step two), passing alpha explicitly as the library's LIF
step does with its configured steepness.
"""
import functools
import jax
import jax.numpy as np
import numpy as onp
EVAL = {'id': 'mutation/jit_under_creator/jaxsnn_superspike', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxsnn', 'source': 'electronicvisions/jaxsnn:jaxsnn/functional/threshold.py:14', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'jit_under_creator', 'base': 'jaxsnn_superspike'}

def heaviside(x):
    return 0.5 + 0.5 * np.sign(x)

@jax.custom_vjp
@jax.jit
def superspike(x, alpha=80):
    """Surrogate gradient used in the SuperSpike paper (Zenke and Ganguli, 2018)."""
    return heaviside(x)

def superspike_fwd(x, alpha):
    return (heaviside(x), (x, alpha))

def superspike_bwd(res, g):
    x, alpha = res
    grad = g / (alpha * np.abs(x) + 1.0) ** 2
    return (grad, None)
superspike.defvjp(superspike_fwd, superspike_bwd)

def eval_fn(w, inp):
    v = 0.8 * np.dot(inp, w)
    z = superspike(v - 0.5, 10.0)
    return z * np.array([1.0, -0.5, 2.0], np.float32)

def eval_inputs():
    w = onp.array([[0.9, -0.4, 0.3], [0.2, 0.8, -0.6]], onp.float32)
    inp = onp.array([0.7, 0.45], onp.float32)
    return (w, inp)
_OUT = onp.array([1.0, -0.5, 2.0])

def eval_reference(w, inp):
    v = 0.8 * onp.dot(onp.asarray(inp, onp.float64), onp.asarray(w, onp.float64))
    return (0.5 + 0.5 * onp.sign(v - 0.5)) * _OUT

def eval_grad_reference(w, inp):
    w64, inp64 = (onp.asarray(w, onp.float64), onp.asarray(inp, onp.float64))
    v = 0.8 * onp.dot(inp64, w64)
    s = _OUT / (10.0 * onp.abs(v - 0.5) + 1.0) ** 2 * 0.8
    return (onp.outer(inp64, s), w64 @ s)
