"""BrainPy: the spike function of the spike-based backpropagation example's `LIFNode`, a
custom_vjp made in call form, `relu_grad = custom_vjp(f)` with `custom_vjp` imported by name and
registered with `relu_grad.defvjp(f_fwd, f_bwd)`: the primal is the Heaviside step
`x > 0` as floats, fwd saves a 1-tuple holding the boolean mask `x <= 0`, and bwd zeroes the
cotangent where no spike fired, scales it by the neuron's accumulated gradient and returns a
1-tuple. The rule is a surrogate gradient, deliberately not the step's derivative
(`eval_grad_reference` gives it).

Adapted from brainpy/BrainPy:examples/training_snn_models/spikebased_bp_for_cifar10.py:56 (commit
a13eef5a). There the three functions are methods of `LIFNode` (`custom_vjp(self.f)` in
`__init__`, bwd reading the state `self.grad_acc`); here they are closures of a factory that
takes the accumulated gradient, and brainpy.math's `bm.asarray`, `bm.where` and `.value` are
jax.numpy's. The caller is one LIF update: integrate the input current into the membrane,
spike through the custom function, reset, and leak.
"""
import jax
import jax.numpy as jnp
from jax import custom_vjp
import numpy as np
EVAL = {'id': 'mutation/bwd_bare_in_helper/brainpy_lif_spike', 'family': 'mutation', 'expect': 'unknown', 'library': 'brainpy', 'source': 'brainpy/BrainPy:examples/training_snn_models/spikebased_bp_for_cifar10.py:56', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_bare_in_helper', 'base': 'brainpy_lif_spike'}

def make_spike_fn(grad_acc):

    def f(x):
        return jnp.asarray(x > 0.0, jnp.float32)

    def f_fwd(x):
        return (jnp.asarray(x > 0.0, jnp.float32), (x <= 0.0,))

    def _f_bwd_impl(res, g):
        g = jnp.where(res[0], 0.0, g)
        return grad_acc * g

    def f_bwd(res, g):
        return _f_bwd_impl(res, g)
    relu_grad = custom_vjp(f)
    relu_grad.defvjp(f_fwd, f_bwd)
    return relu_grad
_GRAD_ACC = np.array([0.5, 1.5, 1.0, 2.0], np.float32)
_SPIKE = make_spike_fn(_GRAD_ACC)

def lif_update(v, dv, v_threshold=1.0, v_reset=0.0, tau=100.0):
    v = v + dv
    spike = _SPIKE(v - v_threshold)
    v = jnp.where(v > v_threshold, v_reset, v)
    v = v - jax.lax.stop_gradient((v - v_reset) / tau)
    return (spike, v)

def eval_fn(w, x):
    spike, v = lif_update(jnp.array([0.6, 0.9, 0.2, 0.95], jnp.float32), w * x)
    return spike * 2.0 + v

def eval_inputs():
    return (np.array([0.8, 1.1, 0.7, -0.5], np.float32), np.array([0.9, 0.4, 1.5, 0.3], np.float32))

def _forward(w, x):
    v = np.array([0.6, 0.9, 0.2, 0.95]) + np.asarray(w, np.float64) * np.asarray(x, np.float64)
    spike = (v - 1.0 > 0.0).astype(np.float64)
    v_after = np.where(v > 1.0, 0.0, v)
    return (spike, v_after)

def eval_reference(w, x):
    spike, v = _forward(w, x)
    return spike * 2.0 + v * (1.0 - 1.0 / 100.0)

def eval_grad_reference(w, x):
    w64, x64 = (np.asarray(w, np.float64), np.asarray(x, np.float64))
    v = np.array([0.6, 0.9, 0.2, 0.95]) + w64 * x64
    fired = v > 1.0
    d_spike = np.where(fired, 2.0 * _GRAD_ACC, 0.0)
    d_v = np.where(fired, 0.0, 1.0)
    dv = d_spike + d_v
    return (dv * x64, dv * w64)
