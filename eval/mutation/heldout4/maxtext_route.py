"""maxtext: routing MoE tokens to their selected experts (each token copied once per expert it
selected, the copies sorted by expert id) through `functools.partial(jax.custom_vjp,
nondiff_argnums=(2,))` over a function whose body is `_route_fwd(...)[0]`; the backward pass,
whose first parameter is the static kernel flag, scatters the cotangent back by "unrouting" it
(the K copies of a token summed) and gives None for the integer expert ids.

Adapted from AI-Hypercomputer/maxtext:src/maxtext/kernels/sort_activations.py:24 (the TPU
gather-reduce kernel behind `use_gather_mosaic_kernel=True` is replaced by `jnp.take`).
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {'id': 'mutation/maxtext_route', 'family': 'mutation', 'expect': 'ok', 'library': 'maxtext', 'source': 'AI-Hypercomputer/maxtext:src/maxtext/kernels/sort_activations.py:24', 'argnums': (0,), 'extra': ['grad_jit']}


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def route(tokens, selected_experts, use_gather_mosaic_kernel):
    """Route tokens to selected experts."""
    return _route_fwd(tokens, selected_experts, use_gather_mosaic_kernel)[0]


def _route_fwd(tokens, selected_experts, use_gather_mosaic_kernel):
    return (_route_impl(tokens, selected_experts, use_gather_mosaic_kernel), selected_experts)


def _route_bwd(use_gather_mosaic_kernel, residuals, grads):
    selected_experts = residuals
    return (_unroute_impl(grads, selected_experts, use_gather_mosaic_kernel), None)


route.defvjp(_route_fwd, _route_bwd)


def _route_impl(tokens, selected_experts, use_gather_mosaic_kernel):
    """Gather `tokens` according to `selected_experts`."""
    assert tokens.shape[0] == selected_experts.shape[0] and selected_experts.ndim == 2
    inds = jnp.argsort(jnp.ravel(selected_experts)) // selected_experts.shape[1]
    return _sort_impl(tokens, inds, use_gather_mosaic_kernel)


def _unroute_impl(tokens, selected_experts, use_gather_mosaic_kernel):
    """Reverse the routing: back to the tokens' order, the copies of a token summed."""
    assert tokens.shape[0] == selected_experts.shape[0] * selected_experts.shape[1]
    inds = jnp.argsort(jnp.argsort(jnp.ravel(selected_experts)))
    return jnp.sum(
        jnp.reshape(_sort_impl(tokens, inds, use_gather_mosaic_kernel),
                    (-1, selected_experts.shape[1]) + tokens.shape[1:]),
        axis=1,
    )


def _sort_impl(tokens, inds, use_gather_mosaic_kernel):
    if use_gather_mosaic_kernel:
        return jnp.take(tokens, inds, axis=0)
    return tokens[inds, ...]


_WEIGHTS = np.linspace(0.5, 2.0, 6 * 3, dtype=np.float32).reshape(6, 3)


def eval_fn(tokens, selected_experts):
    routed = route(tokens, selected_experts, False)
    return jnp.tanh(routed) * _WEIGHTS


def eval_inputs():
    tokens = np.array([[0.2, -0.5, 1.1], [0.7, 0.3, -0.9], [-1.2, 0.4, 0.05]], np.float32)
    selected_experts = np.array([[2, 0], [1, 2], [0, 3]], np.int32)
    return (tokens, selected_experts)


def eval_reference(tokens, selected_experts):
    tokens = np.asarray(tokens, np.float64)
    inds = np.argsort(np.ravel(selected_experts), kind='stable') // selected_experts.shape[1]
    return np.tanh(tokens[inds]) * _WEIGHTS.astype(np.float64)
