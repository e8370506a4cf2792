"""AXLearn: `forward_optimization_barrier(pytree)`, the identity wrapped in
`jax.lax.optimization_barrier` on the forward pass only: a bare `@jax.custom_jvp` stacked on
`@jax.custom_batching.custom_vmap` (the library notes it must be wrapped in custom_vmap before
custom_jvp), over one argument that is any pytree; the rule, registered with
`@forward_optimization_barrier.defjvp`, unpacks `(primal_out,) = primals` and `(tangent_out,) =
tangents`, passes the primal through the barrier again and returns the tangent unchanged; the vmap
rule, registered with `@forward_optimization_barrier.def_vmap`, takes `batch_axis_size, in_batched,
pytree` and returns the barrier of the batched pytree with the input's batched flags.

Adapted from apple/axlearn:axlearn/common/ops/_optimization_barrier.py:10 (commit 34aed43), kept
close to the library (docstrings shortened). The caller is the library's docstring example made
float32 and given a pytree: a tuple of two intermediate values goes through the barrier and the
outputs are combined, `x` and `y` differentiated.
"""
import functools
from typing import Any
import jax
import jax.numpy as jnp
import numpy
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/axlearn_optimization_barrier', 'family': 'mutation', 'expect': 'unknown', 'library': 'axlearn', 'source': 'apple/axlearn:axlearn/common/ops/_optimization_barrier.py:10', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'host_callback_primal', 'base': 'axlearn_optimization_barrier'}

@jax.custom_jvp
@jax.custom_batching.custom_vmap
def forward_optimization_barrier(pytree: Any) -> Any:
    _out = jax.lax.optimization_barrier(pytree)
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

@forward_optimization_barrier.defjvp
def forward_optimization_barrier_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    primal_out, = primals
    primal_out = forward_optimization_barrier(primal_out)
    tangent_out, = tangents
    return (primal_out, tangent_out)

@forward_optimization_barrier.def_vmap
def forward_optimization_barrier_vmap(batch_axis_size: int, in_batched: tuple, pytree: Any) -> tuple[Any, Any]:
    out_batched, = in_batched
    return (forward_optimization_barrier(pytree), out_batched)
A = 16.0

def eval_fn(x, y):
    u, v = forward_optimization_barrier((A * x * y, jnp.sin(x)))
    return (u / A) ** 2 + v * y

def eval_inputs():
    return (numpy.array([0.3, -1.1, 0.8], numpy.float32), numpy.array([1.5, 0.4, -0.7], numpy.float32))

def eval_reference(x, y):
    x, y = (numpy.asarray(x, numpy.float64), numpy.asarray(y, numpy.float64))
    return (x * y) ** 2 + numpy.sin(x) * y
