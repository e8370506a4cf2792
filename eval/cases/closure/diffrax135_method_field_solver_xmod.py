"""closure hazard (custom_jvp), caller in another module: a Module method wraps its own vector field in a lambda over `self` and hands it to a solver's custom_jvp nondiff slot.

Report: patrick-kidger/diffrax#135 https://github.com/patrick-kidger/diffrax/issues/135 ("Using
implicit solver together with Equinox raises ad.CustomJVPException": a model's `__call__` built
`lambda t, x, _: self.vector_field(x)` over its `params` field and solved with an implicit
solver whose root-finder carries a custom_jvp; fitting the params failed, an explicit solver
worked). Here this module is the solver library (implicit Euler, fixed-point iterations, a
custom_jvp with the field in nondiff_argnums); the model and the fit live in
`_diffrax135_method_field_driver.py`, which imports this module by name.
"""
from functools import partial

import jax

EVAL = {
    "id": "closure/diffrax135_method_field_solver_xmod", "family": "closure", "expect": "hazard",
    "source": "patrick-kidger/diffrax#135", "url": "https://github.com/patrick-kidger/diffrax/issues/135",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_diffrax135_method_field_driver.py",
}
STEPS, ITERS = 10, 25


def _solve(field, y0, dt):
    def step(y, _):
        z, _ = jax.lax.scan(lambda z, _: (y + dt * field(z), None), y, None, length=ITERS)
        return z, None
    y, _ = jax.lax.scan(step, y0, None, length=STEPS)
    return y


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def implicit_euler(field, y0, dt):  # eval: span
    return _solve(field, y0, dt)


@implicit_euler.defjvp
def implicit_euler_jvp(field, primals, tangents):
    return jax.jvp(lambda y, d: _solve(field, y, d), primals, tangents)
