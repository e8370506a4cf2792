"""structure look-alike: a nested custom_vjp whose primal is fwd(...)[0], residual (indices, end, shape), bwd (grad, None, None).

Source: AI-Hypercomputer/maxtext src/maxtext/kernels/ragged/ragged_sort.py
https://github.com/AI-Hypercomputer/maxtext/blob/main/src/maxtext/kernels/ragged/ragged_sort.py
(`a2a_ragged_sort`: inside the public function, `@jax.custom_vjp def _a2a_ragged_sort(inputs,
sort_indices, valid_end)` returns `_a2a_ragged_sort_fwd(...)[0]`; the fwd gathers rows, zeroes those
past `valid_end` and keeps `(sort_indices, end, inputs.shape)`; the bwd unpacks
`sort_indices, end, _ = res`, scatters the cotangent back through the inverse permutation and
returns `grad_inputs, None, None`: the indices and the valid length are integers).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_maxtext_ragged_sort_primal_from_fwd", "family": "structure",
    "expect": "ok", "source": "AI-Hypercomputer/maxtext src/maxtext/kernels/ragged/ragged_sort.py",
    "url": "https://github.com/AI-Hypercomputer/maxtext/blob/main/src/maxtext/kernels/ragged/ragged_sort.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}


def ragged_sort(inputs, sort_indices, valid_end):
    @jax.custom_vjp  # eval: span
    def _ragged_sort(inputs, sort_indices, valid_end):
        return _ragged_sort_fwd(inputs, sort_indices, valid_end)[0]  # eval: span

    def _ragged_sort_fwd(inputs, sort_indices, valid_end):
        end = valid_end.astype(jnp.int32)
        rows = jnp.arange(sort_indices.shape[0]) < end
        out = jnp.where(rows[:, None], inputs[sort_indices], 0.0)
        return out, (sort_indices, end, inputs.shape)  # eval: span

    def _ragged_sort_bwd(res, g_out):
        sort_indices, end, _ = res  # eval: span
        rows = jnp.arange(sort_indices.shape[0]) < end
        inverse = jnp.argsort(sort_indices)
        grad_inputs = jnp.where(rows[:, None], g_out, 0.0)[inverse]
        return grad_inputs, None, None  # eval: span

    _ragged_sort.defvjp(_ragged_sort_fwd, _ragged_sort_bwd)  # eval: span
    return _ragged_sort(inputs, sort_indices, valid_end)


def eval_fn(tokens, sort_indices, valid_end):
    return jnp.sin(ragged_sort(tokens, sort_indices, valid_end))


def eval_inputs():
    tokens = np.array([[0.3, -0.8], [1.1, 0.2], [-0.5, 0.9], [0.7, 1.4], [0.05, -1.2]], np.float32)
    return (tokens, np.array([2, 4, 0, 3, 1], np.int32), np.int32(3))


def eval_reference(tokens, sort_indices, valid_end):
    rows = np.arange(len(sort_indices))[:, None] < int(valid_end)
    return np.where(rows, np.sin(np.asarray(tokens, np.float64)[np.asarray(sort_indices)]), 0.0)
