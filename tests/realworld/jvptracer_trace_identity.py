# Pattern (a filtered-jvp helper): forward-mode code checks that a value is a JVPTracer of the
# trace it created itself, by comparing the tracer's trace. Under jax.jvp that is exactly right.
import jax
from jax.interpreters import ad


def _belongs_to(trace):
    def check(x):
        return isinstance(x, ad.JVPTracer) and x._trace is trace

    return check


def split_tangents(values, trace):
    mine = _belongs_to(trace)
    return [v.tangent if mine(v) else None for v in jax.tree_util.tree_leaves(values)]
