"""Rockpool (spiking neural networks, SynSense): the spike-generation function of the JAX LIF
neuron, `step_pwl(x, threshold, window=0.5, max_spikes_per_dt=2.0**16)`, a bare module-level
`@jax.custom_jvp` over four parameters, the last two Python floats with defaults: the number of
spikes `floor(x / threshold)` above threshold, clipped to `max_spikes_per_dt`. The rule
`@step_pwl.defjvp def step_pwl_jvp(primals, tangents)` unpacks all four primals and all four
tangents (the window's and the clip's tangents unused), calls the custom function on `*primals`
and returns a piece-wise linear surrogate tangent, `(x >= threshold - window) * (x_dot /
threshold - threshold_dot * x / threshold**2)`: the derivative of `x / threshold` inside the
learning window. The caller, `LIFJax.evolve`'s single-step dynamics under `jax.lax.scan`, calls it
positionally with the window and the clip as constants (`step_pwl(vmem, self.threshold, 0.5,
self.max_spikes_per_dt)`), then subtracts `spikes * threshold` from the membrane (subtractive
reset).

The rule is deliberately not the derivative of the step (zero almost everywhere): it is the
surrogate gradient used for training. `eval_grad_reference` gives the gradient the rule means:
forward-mode through the same recursion in NumPy float64, the spike's tangent taken from the
surrogate, every other operation differentiated exactly.

Adapted from synsense/rockpool:rockpool/nn/modules/jax/lif_jax.py:45 (commit 42cee1c9), with
the single-step dynamics of `LIFJax.evolve` (:336, `forward`). Changed: the module machinery
(`JaxModule`, `Parameter`, `State`, auto-batching, the membrane noise, recurrent weights,
several synapses per neuron) is dropped; one batch, one synapse per neuron, no noise; the
time constants are fixed and the caller differentiates the input weights and the thresholds.
"""
import functools
import jax
from jax import numpy as np
from jax.lax import scan
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/while_loop_caller/rockpool_step_pwl', 'family': 'mutation', 'expect': 'unknown', 'library': 'rockpool', 'source': 'synsense/rockpool:rockpool/nn/modules/jax/lif_jax.py:45', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'while_loop_caller', 'base': 'rockpool_step_pwl'}

@jax.custom_jvp
def step_pwl(x, threshold, window=0.5, max_spikes_per_dt: float=2.0 ** 16):
    """
    Heaviside step function with piece-wise linear derivative to use as spike-generation surrogate

    Returns the number of output events for each input value.
    """
    spikes = (x >= threshold) * np.floor(x / threshold)
    return np.clip(spikes, 0.0, max_spikes_per_dt)

@step_pwl.defjvp
def step_pwl_jvp(primals, tangents):
    x, threshold, window, max_spikes_per_dt = primals
    x_dot, threshold_dot, window_dot, max_spikes_per_dt_dot = tangents
    primal_out = step_pwl(*primals)
    tangent_out = (x >= threshold - window) * (x_dot / threshold - threshold_dot * x / threshold ** 2)
    return (primal_out, tangent_out)
DT = 0.001
TAU_MEM = 0.02
TAU_SYN = 0.01
MAX_SPIKES_PER_DT = 2.0 ** 16
BIAS = onp.array([0.1, 0.0, -0.1], onp.float32)
READOUT = onp.array([1.0, -0.5, 0.75], onp.float32)
INPUTS = onp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], onp.float32)

def evolve(w_in, threshold, input_data):
    alpha = np.exp(-DT / TAU_MEM)
    beta = np.exp(-DT / TAU_SYN)

    def forward(state, sp_in_t):
        spikes, isyn, vmem = state
        isyn = isyn + sp_in_t
        vmem *= alpha
        isyn *= beta
        vmem = vmem + isyn + BIAS
        spikes = step_pwl(vmem, threshold, 0.5, MAX_SPIKES_PER_DT)
        vmem = vmem - spikes * threshold
        return ((spikes, isyn, vmem), (spikes, vmem))
    n = w_in.shape[-1]
    zeros = np.zeros((n,), w_in.dtype)
    _, (spikes_ts, vmem_ts) = scan(forward, (zeros, zeros, zeros), input_data @ w_in)
    return (spikes_ts, vmem_ts)

def eval_fn(w_in, threshold):
    spikes_ts, vmem_ts = evolve(w_in, threshold, INPUTS)
    return spikes_ts @ READOUT + 0.1 * vmem_ts.sum(-1)

def eval_inputs():
    w_in = onp.array([[1.4, 1.6, 0.83], [1.3, 0.63, 0.26]], onp.float32)
    threshold = onp.array([1.0, 1.2, 0.9], onp.float32)
    return (w_in, threshold)

def _lif_np(w_in, threshold, dw, dthr):
    """The caller's value and its surrogate tangent along (dw, dthr), in float64."""
    alpha, beta = (onp.exp(-DT / TAU_MEM), onp.exp(-DT / TAU_SYN))
    n = w_in.shape[-1]
    isyn, vmem = (onp.zeros(n), onp.zeros(n))
    d_isyn, d_vmem = (onp.zeros(n), onp.zeros(n))
    out, d_out = ([], [])
    for x_t in INPUTS.astype(onp.float64):
        isyn = (isyn + x_t @ w_in) * beta
        d_isyn = (d_isyn + x_t @ dw) * beta
        vmem = vmem * alpha + isyn + BIAS
        d_vmem = d_vmem * alpha + d_isyn
        spikes = onp.clip((vmem >= threshold) * onp.floor(vmem / threshold), 0.0, MAX_SPIKES_PER_DT)
        d_spikes = (vmem >= threshold - 0.5) * (d_vmem / threshold - dthr * vmem / threshold ** 2)
        vmem = vmem - spikes * threshold
        d_vmem = d_vmem - d_spikes * threshold - spikes * dthr
        out.append(spikes @ READOUT + 0.1 * vmem.sum())
        d_out.append(d_spikes @ READOUT + 0.1 * d_vmem.sum())
    return (onp.array(out), onp.array(d_out))

def eval_reference(w_in, threshold):
    w_in, threshold = (onp.asarray(w_in, onp.float64), onp.asarray(threshold, onp.float64))
    return _lif_np(w_in, threshold, onp.zeros_like(w_in), onp.zeros_like(threshold))[0]

def eval_grad_reference(w_in, threshold):
    w_in, threshold = (onp.asarray(w_in, onp.float64), onp.asarray(threshold, onp.float64))
    g_w, g_thr = (onp.zeros_like(w_in), onp.zeros_like(threshold))
    for idx in onp.ndindex(w_in.shape):
        e = onp.zeros_like(w_in)
        e[idx] = 1.0
        g_w[idx] = _lif_np(w_in, threshold, e, onp.zeros_like(threshold))[1].sum()
    for idx in onp.ndindex(threshold.shape):
        e = onp.zeros_like(threshold)
        e[idx] = 1.0
        g_thr[idx] = _lif_np(w_in, threshold, onp.zeros_like(w_in), e)[1].sum()
    return (g_w, g_thr)

def while_loop_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jax.tree_util.tree_map(jnp.asarray, args[0])

    def descend(v):
        return jax.tree_util.tree_map(lambda a, b: a - 0.001 * b, v, g(v))

    def step(state):
        k, v = state
        return (k + 1, descend(v))
    return jax.lax.while_loop(lambda state: state[0] < 3, step, (0, x))[1]

def while_loop_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jax.tree_util.tree_map(jnp.asarray, args[0])

    def descend(v):
        return jax.tree_util.tree_map(lambda a, b: a - 0.001 * b, v, g(v))
    for _ in range(3):
        x = descend(x)
    return x

def eval_custom():
    args = tuple(eval_inputs())
    return {'while_loop_usage': lambda: (while_loop_usage(*args), while_loop_usage_expected(*args))}
