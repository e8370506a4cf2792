"""tunix (Google's JAX post-training library): the row permutation `_custom_permute(x,
permute_indices)` of the Qwen3 mixture-of-experts layer, a bare module-level `@jax.custom_vjp`
whose primal is the gather `x[permute_indices]`; fwd calls the custom function itself and saves
the integer permutation as its only residual (a bare array, not a tuple); bwd `(res, g)` unpacks
`permute_indices = res`, inverts the permutation with `jnp.argsort` and returns the cotangent
gathered back, `g[unpermute_indices]`, and `None` for the integer indices. Registered by the
statement `_custom_permute.defvjp(_custom_permute_fwd, _custom_permute_bwd)`. The caller is the
token-sorted ("megablox") expert dispatch: every token is repeated once per selected expert, the
copies are sorted by expert with `_custom_permute`, each sorted row goes through its expert's
SwiGLU feed-forward, and the outputs are unsorted with `_custom_permute` again and mixed by the
router's top-k softmax weights.

Adapted from google/tunix:tunix/models/qwen3/model.py:68 (commit c7d8950) and its caller
`sharded_megablox_moe` in the same file (:864, the repeat / argsort / permute / unpermute
sequence at :885-:1021). Changed: the Pallas grouped matmul `megablox.gmm(x, w, group_sizes)` is
written as a gather of each sorted row's expert weights and an `einsum` (the same product, row by
row); the `shard_map`, expert-parallel `ragged_all_to_all` branch and tensor-parallel gathers are
dropped (one device); the layer's parameters are module constants except the router, which the
caller differentiates with the tokens. Sizes: 4 tokens of width 3, 3 experts, 2 per token,
hidden width 5.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/vectorize_under_creator/tunix_custom_permute', 'family': 'mutation', 'expect': 'unknown', 'library': 'tunix', 'source': 'google/tunix:tunix/models/qwen3/model.py:68', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'vectorize_under_creator', 'base': 'tunix_custom_permute'}
NUM_EXPERTS = 3
EXPERTS_PER_TOK = 2
_rng = np.random.RandomState(7)
GATE_W = (_rng.randn(NUM_EXPERTS, 3, 5) * 0.5).astype(np.float32)
UP_W = (_rng.randn(NUM_EXPERTS, 3, 5) * 0.5).astype(np.float32)
DOWN_W = (_rng.randn(NUM_EXPERTS, 5, 3) * 0.5).astype(np.float32)

@jax.custom_vjp
@jnp.vectorize
def _custom_permute(x, permute_indices):
    return x[permute_indices]

def _custom_permute_fwd(x, permute_indices):
    return (_custom_permute(x, permute_indices), permute_indices)

def _custom_permute_bwd(res, g):
    permute_indices = res
    unpermute_indices = jnp.argsort(permute_indices)
    return (g[unpermute_indices], None)
_custom_permute.defvjp(_custom_permute_fwd, _custom_permute_bwd)

def _grouped_matmul(lhs, rhs, expert_of_row):
    """What `megablox.gmm` computes: each row times the weight matrix of its expert group."""
    return jnp.einsum('md,mdn->mn', lhs, jnp.take(rhs, expert_of_row, axis=0))

def megablox_moe(inputs, router_w, gate_w=GATE_W, up_w=UP_W, down_w=DOWN_W):
    """Route tokens (T, D) to their top-k experts, sorted by expert, and mix the outputs."""
    T, D_global = inputs.shape
    router_logits = inputs @ router_w
    top_logits, indices = jax.lax.top_k(router_logits, EXPERTS_PER_TOK)
    weights = jax.nn.softmax(top_logits, axis=-1)
    flat_repeated_inputs = jnp.repeat(inputs, EXPERTS_PER_TOK, axis=0)
    flat_selected_indices = indices.reshape(-1)
    sort_indices = jnp.argsort(flat_selected_indices)
    unsort_indices = jnp.argsort(sort_indices)
    sorted_inputs = _custom_permute(flat_repeated_inputs, sort_indices)
    sorted_expert_indices = flat_selected_indices[sort_indices]
    projected = _grouped_matmul(sorted_inputs, gate_w, sorted_expert_indices)
    middle = jax.nn.silu(projected) * _grouped_matmul(sorted_inputs, up_w, sorted_expert_indices)
    sorted_outputs = _grouped_matmul(middle, down_w, sorted_expert_indices)
    outputs = _custom_permute(sorted_outputs, unsort_indices)
    outputs = outputs.reshape(T, EXPERTS_PER_TOK, D_global).transpose(0, 2, 1)
    return jnp.einsum('tdk,tk->td', outputs, weights)

def eval_fn(inputs, router_w):
    return megablox_moe(inputs, router_w)

def eval_inputs():
    x = np.array([[0.3, -0.8, 0.5], [1.1, 0.2, -0.4], [-0.6, 0.9, 0.7], [0.4, 0.5, -1.2]], np.float32)
    router = np.array([[0.9, -0.3, 0.2], [-0.5, 0.8, 0.1], [0.3, 0.4, -0.9]], np.float32)
    return (x, router)

def eval_reference(inputs, router_w):
    x = np.asarray(inputs, np.float64)
    logits = x @ np.asarray(router_w, np.float64)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-logits[t], kind='stable')[:EXPERTS_PER_TOK]
        w = np.exp(logits[t, top] - logits[t, top].max())
        w = w / w.sum()
        for e, we in zip(top, w):
            h = x[t] @ GATE_W[e].astype(np.float64)
            mid = h / (1.0 + np.exp(-h)) * (x[t] @ UP_W[e].astype(np.float64))
            out[t] += we * (mid @ DOWN_W[e].astype(np.float64))
    return out
