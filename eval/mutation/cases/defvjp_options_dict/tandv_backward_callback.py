"""track-and-visualize (Graphcore Research's tracker of activation / gradient statistics): the JAX
tracker's `backward_callback(f, *args)`, an identity over any number of arrays made with
`@partial(jax.custom_vjp, nondiff_argnums=(0,))` whose nondiff argument is a *callable* (a
`functools.partial` of the tracker's bound method, made anew at every call) and whose
differentiated arguments are variadic (`*args`): the primal returns the tuple `args` itself, fwd
`backward_callback_fwd(f, *args)` returns `args, None` (no residuals), bwd
`backward_callback_bwd(f, _, args_grad)` calls `f(*args_grad)` -- the hook that records the
gradient flowing into the tracked module's output -- and returns `args_grad` unchanged (the
cotangent of the output tuple is the tuple of input cotangents). Registered by the statement
`backward_callback.defvjp(backward_callback_fwd, backward_callback_bwd)`. The caller is the
tracker's module interceptor: every layer's output goes through `backward_callback(partial(
self.create_event_and_stash, name=..., type=..., tensor_type="Gradient", stash=..., args=(),
kwargs={}), output)` and the layer keeps `output[0]`; the stash function records the mean
absolute gradient with `jax.debug.callback`. Here the tracked model is a two-layer perceptron
whose loss is differentiated in its weights and its inputs.

Adapted from graphcore-research/track-and-visualize:tandv/track/jax/_utils.py:27
(`backward_callback`, commit 28527bb; the file notes it is adapted from graphcore-research/
jax-scalify:jax_scalify/ops/utils.py), with `JaxTracker._data_interceptor` and
`create_event_and_stash` of tandv/track/jax/core.py:147 and :124. Changed: flax's
`intercept_methods` hook is an explicit call per layer (`tracked`); the stash keeps the mean
absolute value through `jax.debug.callback` instead of storing the array and computing its
statistics and histogram (`stash_all_stats_and_hist`) eagerly; the sibling `forward_callback`
(the same identity, its hook in fwd) is left out.
"""
from functools import partial
from typing import Any, NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
_DERIVATIVE_OPTIONS = {'symbolic_zeros': True}
EVAL = {'id': 'mutation/defvjp_options_dict/tandv_backward_callback', 'family': 'mutation', 'expect': 'unknown', 'library': 'track-and-visualize', 'source': 'graphcore-research/track-and-visualize:tandv/track/jax/_utils.py:27', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'defvjp_options_dict', 'base': 'tandv_backward_callback'}

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def backward_callback(f, *args):
    """Custom callback, called on gradients."""
    return args

def backward_callback_fwd(f, *args):
    return (args, None)

def backward_callback_bwd(f, _, args_grad):
    f(*args_grad)
    return args_grad
backward_callback.defvjp(backward_callback_fwd, backward_callback_bwd, **_DERIVATIVE_OPTIONS)

class Event(NamedTuple):
    name: str
    type: str
    tensor_type: str
    value: Any
    args: tuple
    kwargs: dict

class JaxTracker:

    def __init__(self, track_gradients=True):
        self.track_gradients = track_gradients
        self.stashes = []

    def _record(self, name, tensor_type, mean_abs):
        self.stashes.append((name, tensor_type, float(np.mean(mean_abs))))

    def stash_event(self, event):
        jax.debug.callback(self._record, event.name, event.tensor_type, jnp.mean(jnp.abs(event.value)))

    def create_event_and_stash(self, value, name, type, tensor_type, stash=True, *args, **kwargs):
        if stash:
            self.stash_event(Event(name=name, type=type, tensor_type=tensor_type, value=value, args=args, kwargs=kwargs))

    def tracked(self, name, output):
        """What the interceptor does with one module's output."""
        output = backward_callback(partial(self.create_event_and_stash, name=name, type='Dense', tensor_type='Gradient', stash=self.track_gradients, args=(), kwargs={}), output)
        return output[0]
TRACKER = JaxTracker()

def mlp(w1, b1, w2, x):
    h = TRACKER.tracked('Dense_0', jnp.tanh(x @ w1 + b1))
    return TRACKER.tracked('Dense_1', h @ w2)

def eval_fn(w1, b1, w2, x):
    return jnp.sum(jax.nn.log_softmax(mlp(w1, b1, w2, x)) * LABELS, axis=-1)
LABELS = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]

def eval_inputs():
    rng = np.random.RandomState(7)
    w1 = (0.7 * rng.normal(size=(5, 4))).astype(np.float32)
    b1 = (0.1 * rng.normal(size=4)).astype(np.float32)
    w2 = (0.7 * rng.normal(size=(4, 3))).astype(np.float32)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    return (w1, b1, w2, x)

def eval_reference(w1, b1, w2, x):
    f64 = lambda a: np.asarray(a, np.float64)
    z = np.tanh(f64(x) @ f64(w1) + f64(b1)) @ f64(w2)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return np.sum(logp * LABELS, axis=-1)
