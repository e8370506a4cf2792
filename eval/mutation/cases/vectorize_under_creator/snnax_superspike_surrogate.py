"""snnax (spiking neural networks on equinox, PGI15): the surrogate-gradient factory
`superspike_surrogate(beta=10.)`, which defines inside its body a `@custom_jvp` (imported as
`from jax import custom_jvp`) Heaviside step, `heaviside_with_superspike_surrogate(x)` =
`jnp.heaviside(x, 1.)`, registers its rule with the decorator
`@heaviside_with_superspike_surrogate.defjvp def f_jvp(primals, tangents)` (the rule unpacks
`x, = primals` / `x_dot, = tangents` with trailing commas, calls the custom function for the
primal and returns the SuperSpike surrogate `x_dot / (1. + beta * jnp.abs(x))`, `beta` closed
over from the factory), and returns the custom function. The caller is a `SimpleLIF` layer that
stores the returned function as `self.spike_fn` (the layer's default argument
`spike_fn=superspike_surrogate(10.)`), leaks its membrane potential with a clamped decay,
spikes with `self.spike_fn(mem_pot - self.threshold)` and resets by subtracting the potential
where it spiked, the reset under `stop_gradient`; the layer runs over time under `lax.scan`
on the currents of a linear input projection, and the caller counts each neuron's spikes.

Adapted from PGI15/snnax:src/snnax/functional/surrogate.py:12 (commit b7a55c6) and
`SimpleLIF` of src/snnax/snn/layers/lif.py:14 (its `__init__` and `__call__`). Changed: the layer
is a plain Python class (equinox's `StatefulLayer`, `init_parameters` and state initialisers are
dropped; the state starts at zeros); the time loop of snnax's `Sequential` is a `lax.scan`; the
projection is `x @ w`. The spike counts are piecewise constant, so the module gives
`eval_grad_reference`, the gradient the surrogate defines (the reverse recursion of the leaky
potential with the SuperSpike factor at every step, the reset's gradient stopped), in NumPy.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_jvp, lax
from jax.lax import stop_gradient
EVAL = {'id': 'mutation/vectorize_under_creator/snnax_superspike_surrogate', 'family': 'mutation', 'expect': 'unknown', 'library': 'snnax', 'source': 'PGI15/snnax:src/snnax/functional/surrogate.py:12', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'vectorize_under_creator', 'base': 'snnax_superspike_surrogate'}
DECAY = 0.8
THRESHOLD = 1.0
SURROGATE_BETA = 10.0

def superspike_surrogate(beta: float=10.0):
    """Heaviside step whose derivative is the SuperSpike surrogate 1 / (1 + beta |x|)."""

    @custom_jvp
    @jnp.vectorize
    def heaviside_with_superspike_surrogate(x):
        return jnp.heaviside(x, 1.0)

    @heaviside_with_superspike_surrogate.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        primal_out = heaviside_with_superspike_surrogate(x)
        tangent_out = x_dot / (1.0 + beta * jnp.abs(x))
        return (primal_out, tangent_out)
    return heaviside_with_superspike_surrogate

class SimpleLIF:
    """Leaky integrate-and-fire neurons without synaptic currents."""

    def __init__(self, decay_constants, spike_fn=superspike_surrogate(SURROGATE_BETA), threshold=THRESHOLD, stop_reset_grad=True):
        self.decay_constants = jnp.asarray(decay_constants)
        self.spike_fn = spike_fn
        self.threshold = threshold
        self.stop_reset_grad = stop_reset_grad

    def __call__(self, state, synaptic_input):
        alpha = lax.clamp(0.5, self.decay_constants[0], 1.0)
        mem_pot, spike_output = state
        mem_pot = alpha * mem_pot + (1.0 - alpha) * synaptic_input
        spike_output = self.spike_fn(mem_pot - self.threshold)
        reset_pot = mem_pot * spike_output
        refectory_potential = stop_gradient(reset_pot) if self.stop_reset_grad else reset_pot
        mem_pot = mem_pot - refectory_potential
        state = [mem_pot, spike_output]
        return [state, spike_output]
LAYER = SimpleLIF([DECAY])

def spike_counts(inputs, w):
    """Run the layer over time on the projected inputs (T, n_in) @ (n_in, n_out); count spikes."""
    currents = inputs @ w
    init = [jnp.zeros(w.shape[-1], currents.dtype), jnp.zeros(w.shape[-1], currents.dtype)]

    def step(state, current):
        state, spikes = LAYER(state, current)
        return (state, spikes)
    _, spikes = lax.scan(step, init, currents)
    return jnp.sum(spikes, axis=0)

def eval_fn(inputs, w):
    return spike_counts(inputs, w)

def eval_inputs():
    inputs = np.array([[2.1, 0.3, 1.4], [1.8, 2.6, 0.2], [0.4, 1.9, 2.8], [3.1, 0.7, 1.1], [0.9, 2.4, 2.0], [2.7, 1.5, 0.5]], np.float32)
    w = np.array([[1.2, 0.4, 0.9, 0.1], [0.3, 1.1, 0.6, 1.4], [0.8, 0.2, 1.3, 0.7]], np.float32)
    return (inputs, w)

def _simulate(inputs, w):
    x, w = (np.asarray(inputs, np.float64), np.asarray(w, np.float64))
    alpha = min(max(DECAY, 0.5), 1.0)
    currents = x @ w
    mem = np.zeros(w.shape[1])
    pots, spikes = ([], [])
    for current in currents:
        mem = alpha * mem + (1 - alpha) * current
        s = (mem - THRESHOLD >= 0).astype(np.float64)
        pots.append(mem.copy())
        spikes.append(s)
        mem = mem - mem * s
    return (x, w, alpha, np.array(pots), np.array(spikes))

def eval_reference(inputs, w):
    return _simulate(inputs, w)[4].sum(axis=0)

def eval_grad_reference(inputs, w):
    x, w, alpha, pots, _ = _simulate(inputs, w)
    surrogate = 1.0 / (1.0 + SURROGATE_BETA * np.abs(pots - THRESHOLD))
    g_current = np.zeros_like(pots)
    carry = np.zeros(w.shape[1])
    for t in range(len(pots) - 1, -1, -1):
        carry = surrogate[t] + alpha * carry
        g_current[t] = (1 - alpha) * carry
    return (g_current @ w.T, x.T @ g_current)
