"""init2winit (Google's training library, binarized layers): `floor_with_gradient(x)`, a bare
`@jax.custom_jvp` around `jnp.floor` whose JVP rule is the straight-through estimator: the primal
recomputed through the custom function from `primals[0]` (indexed, not unpacked) and the input
tangent `tangents[0]` returned unchanged. `BinarizeOps` (a class with a nested record of
hyperparameters, a classmethod constructor `create_ops` and a method `binarize`) scales its input
by a stop-gradient bound, clips it, and maps it to +-bound/2 through `floor_with_gradient(x) + 0.5`.

Adapted from google/init2winit:init2winit/model_lib/binarize_layers.py:117 (commit afd5a84, the rule
at lines 95-114, `BinarizeOps` at 123-191). Changed: the library registers the rule through a
helper, `add_straight_through_estimator(jax_function)`, which defines `ste` closing over the
function and calls `jax_function.defjvp(ste)`; here the rule is a module-level function
`floor_ste(primals, tangents)` registered by the statement `floor_with_gradient.defjvp(floor_ste)`
(same rule, the custom function named in place of the closure); the nested `@dataclasses.dataclass`
`HParams` is a nested `typing.NamedTuple` (a dataclass needs its module in `sys.modules`, which
the checks' loader does not give). The caller binarizes activations
with a fixed bound of 1 and multiplies them by a weight matrix. The gradient the estimator means
(1 inside the clipping range, 0 outside, times the cotangent) is `eval_grad_reference`.
"""
from typing import Any, Iterable, NamedTuple, Optional, Union
import jax
import jax.numpy as jnp
import numpy as np
import equinox.internal as eqxi
EVAL = {'id': 'mutation/caller_nondifferentiable_marker/init2winit_floor_ste', 'family': 'mutation', 'expect': 'unknown', 'library': 'init2winit', 'source': 'google/init2winit:init2winit/model_lib/binarize_layers.py:117', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'caller_nondifferentiable_marker', 'base': 'init2winit_floor_ste'}

@jax.custom_jvp
def floor_with_gradient(x: jax.Array) -> jax.Array:
    """Floor with Straight-Through-Estimator gradient."""
    return jnp.floor(x)

def floor_ste(primals, tangents):
    return (floor_with_gradient(primals[0]), tangents[0])
floor_with_gradient.defjvp(floor_ste)

class BinarizeOps:
    """Binarization operator."""

    class HParams(NamedTuple):
        bound: Optional[Union[float, jnp.ndarray]]
        epsilon: float
        scale_axis: Optional[Union[Iterable[int], str]]

    def __init__(self, bound, epsilon, dtype: Any):
        self.bound = bound
        self.epsilon = epsilon
        self.dtype = dtype

    @classmethod
    def create_ops(cls, x, hparams, dtype=jnp.bfloat16):
        if hparams.bound is None:
            bound = jnp.max(jnp.abs(x), axis=hparams.scale_axis, keepdims=True)
        else:
            bound = jnp.abs(hparams.bound)
        bound = jnp.asarray(bound, dtype)
        bound += jnp.finfo(jnp.float32).eps
        bound = jax.lax.stop_gradient(bound)
        return cls(bound=bound, dtype=dtype, epsilon=hparams.epsilon)

    def binarize(self, x):
        scale = jnp.divide(1.0, self.bound)
        x = jnp.multiply(x, scale)
        clip_bound = 1.0 - self.epsilon
        x = jnp.clip(x, min=-clip_bound, max=clip_bound).astype(self.dtype)
        x = floor_with_gradient(x) + 0.5
        x = jnp.divide(x, scale)
        return x.astype(self.dtype)
HPARAMS = BinarizeOps.HParams(bound=1.0, epsilon=2.0 ** (-7), scale_axis=None)

def eval_fn(acts, kernel):
    kernel = eqxi.nondifferentiable(kernel, name='kernel')
    ops = BinarizeOps.create_ops(acts, HPARAMS, dtype=jnp.float32)
    return ops.binarize(acts) @ kernel

def eval_inputs():
    return (np.array([[0.3, -0.6, 1.4], [-0.2, 0.7, -1.3]], np.float32), np.array([[0.5, -1.0], [0.25, 0.75], [-0.5, 1.5]], np.float32))

def _binary(acts):
    return np.where(np.asarray(acts, np.float64) >= 0, 0.5, -0.5)

def eval_reference(acts, kernel):
    return _binary(acts) @ np.asarray(kernel, np.float64)

def eval_grad_reference(acts, kernel):
    a = np.asarray(acts, np.float64)
    k = np.asarray(kernel, np.float64)
    g = np.ones((a.shape[0], k.shape[1]))
    inside = (np.abs(a) < 1.0 - 2.0 ** (-7)).astype(np.float64)
    return (g @ k.T * inside, _binary(acts).T @ g)
