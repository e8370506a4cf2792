# Pattern (JAX's own implementation): modules inside JAX import only jax._src and dispatch on
# JVPTracer as part of the tracer machinery; the non-JVP branch handles every other tracer.
from jax._src import core
from jax._src.interpreters import ad


def detach(x):
    if isinstance(x, ad.JVPTracer):
        return detach(x.primal)
    return core.get_aval(x)


def maybe_perturbed(x):
    if not isinstance(x, core.Tracer):
        return False
    if isinstance(x, ad.JVPTracer) and isinstance(x.tangent, ad.Zero):
        return maybe_perturbed(x.primal)
    return True
