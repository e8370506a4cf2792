"""SynJAX: the max semiring's `sum` (the "plus" of the (max, +) semiring that dynamic programs
over structures use: Viterbi, best trees), `MaxSemiring.sum(self, a, axis, *, key=None)`, a
method that defines a `@jax.custom_jvp` per call, `_sum(a)`, closing over `self` (the smoothing
option and the temperature) and over the reduced `axis`. The primal selects a one-hot (or
softmax-smoothed) vector along `axis` and returns `jnp.sum(selection * a, axis=axis)`; the rule,
registered with the decorator `@_sum.defjvp` inside the method, unpacks `a, = primals` and
`a_dot, = tangents` and returns the same value and `jnp.sum(selection * a_dot, axis)`: the
tangent of `max` is the tangent at the argmax ("Gradients give argmax"), so the gradient of a
best-path score is the indicator of the best path. The method returns `_sum(a)`.

Adapted from google-deepmind/synjax:synjax/_src/utils/semirings.py:156 (commit 6de574a), with the
`Semiring` interface of the same file (`mul` is `+`, `add` stacks and sums) and `max_one_hot` of
synjax/_src/utils/special.py:197. Changed: the smoothing choices that call other custom
derivatives of the library (`"st-softmax"`, a straight-through replacement, and `"sparsemax"`)
are dropped with their branches; `"softmax"` and the plain max (`None`) are kept; the `key`
keyword is kept and ignored, as in the library. The caller is the Viterbi recursion of a
linear-chain model (initial and transition log-potentials, a `lax.scan` over positions) with
the default, unsmoothed semiring, giving the best score ending in each state; the inputs have
no ties.
"""
import abc
import functools
import operator
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/fori_loop_caller/synjax_max_semiring_sum', 'family': 'mutation', 'expect': 'unknown', 'library': 'synjax', 'source': 'google-deepmind/synjax:synjax/_src/utils/semirings.py:156', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'fori_loop_caller', 'base': 'synjax_max_semiring_sum'}

def max_one_hot(x, axis=-1):
    return (x == x.max(axis=axis, keepdims=True)).astype(jnp.float32)

class Semiring(metaclass=abc.ABCMeta):
    """Semiring interface."""

    def mul(self, a, b, *cs):
        return functools.reduce(operator.add, [a, b, *cs])

    def add(self, a, b, *cs, key=None):
        return self.sum(jnp.stack((a, b, *cs), axis=1), axis=1, key=key)

    def sum(self, a, axis, *, key=None):
        raise NotImplementedError

class MaxSemiring(Semiring):
    """Implements the max semiring (max, +, -inf, 0) with optional smoothing.

    Gradients give argmax.
    """

    def __init__(self, smoothing=None, temperature=1.0):
        super().__init__()
        self.smoothing = smoothing
        self.temperature = temperature

    def _one_hot_selection(self, a, axis):
        """Returns (possibly smoothed) one-hot selection along axis."""
        if self.smoothing is None or self.smoothing == 'max':
            return max_one_hot(a, axis=axis)
        elif self.smoothing == 'softmax':
            return jax.nn.softmax(a / self.temperature, axis=axis)
        else:
            raise NotImplementedError

    def sum(self, a, axis, *, key=None):

        @jax.custom_jvp
        def _sum(a):
            selection = self._one_hot_selection(a, axis)
            return jnp.sum(selection * a, axis=axis)

        @_sum.defjvp
        def _sum_jvp(primals, tangents):
            a, = primals
            a_dot, = tangents
            selection = self._one_hot_selection(a, axis)
            return (jnp.sum(selection * a, axis), jnp.sum(selection * a_dot, axis))
        return _sum(a)

    def add(self, a, b, *cs, key=None):
        if self.smoothing:
            return super().add(a, b, *cs, key=key)
        else:
            return functools.reduce(jnp.maximum, [a, b, *cs])

def viterbi_scores(init, transitions, sr=None):
    """Best log-potential of a path over `transitions.shape[0] + 1` positions ending in each state."""
    sr = MaxSemiring() if sr is None else sr

    def step(alpha, trans):
        alpha = sr.sum(sr.mul(alpha[:, None], trans), axis=0)
        return (alpha, None)
    alpha, _ = jax.lax.scan(step, init, transitions)
    return alpha

def eval_fn(init, transitions):
    return viterbi_scores(init, transitions)

def eval_inputs():
    init = np.array([0.3, -0.8, 1.1], np.float32)
    transitions = np.array([[[0.2, 1.4, -0.6], [0.9, -0.3, 0.5], [-1.2, 0.7, 0.1]], [[0.6, -0.9, 1.3], [-0.4, 1.1, 0.2], [1.5, 0.3, -0.7]], [[-0.5, 0.8, 0.4], [1.2, -1.1, 0.9], [0.1, 0.6, -0.2]]], np.float32)
    return (init, transitions)

def eval_reference(init, transitions):
    alpha = np.asarray(init, np.float64)
    for trans in np.asarray(transitions, np.float64):
        alpha = np.max(alpha[:, None] + trans, axis=0)
    return alpha

def fori_loop_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    return jax.lax.fori_loop(0, 3, lambda i, v: v - 0.01 * g(v), x)

def fori_loop_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    for _ in range(3):
        x = x - 0.01 * g(x)
    return x

def eval_custom():
    args = tuple(eval_inputs())
    return {'fori_loop_usage': lambda: (fori_loop_usage(*args), fori_loop_usage_expected(*args))}
