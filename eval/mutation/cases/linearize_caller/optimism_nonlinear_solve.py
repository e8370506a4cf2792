"""optimism: the implicitly differentiated equilibrium solve `nonlinear_solve(mechanicalEnergy,
settings, UuGuess, designParams)`, `@partial(custom_vjp, nondiff_argnums=(0,1))` with
`custom_vjp` imported by name: the energy object (a Python object with methods) and the
solver settings are nondiff, the initial guess and the design parameters are traced. fwd calls
the custom function and saves `(Uu, designParams)`; bwd, which takes the two nondiff arguments
first, sets the design parameters on the energy object, solves the adjoint system with the
energy's Hessian-vector product, and returns `np.zeros_like(Uu)*v[0]` for the guess (the
equilibrium does not depend on it) and the adjoint's parameter sensitivity.

Adapted from sandialabs/optimism:optimism/inverse/NonlinearSolve.py:8 (commit 44438c1): the
function and its rules as the library spells them; the library's energy object, equation
solver and trust-region adjoint solve are replaced by a small energy
`E(u; p) = 0.5 u.K u + 0.25 sum(u^4) - p.u` whose equilibrium `K u + u^3 = p` is solved by a
fixed number of Newton steps, and whose adjoint is a direct solve with the Hessian
`K + 3 diag(u^2)`; `vec_jacobian_p2(Uu, lam)` is the parameter sensitivity `lam` of that energy.
"""
from functools import partial
import jax
import jax.numpy as np
from jax import custom_vjp
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/linearize_caller/optimism_nonlinear_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'optimism', 'source': 'sandialabs/optimism:optimism/inverse/NonlinearSolve.py:8', 'argnums': (1,), 'extra': ['grad_jit'], 'operator': 'linearize_caller', 'base': 'optimism_nonlinear_solve'}
_K = onp.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])

class Energy:
    """The energy's interface that the rules use: p, hessian_vec, vec_jacobian_p2."""

    def __init__(self, p):
        self.p = p
        self.K = _K.astype(onp.float32)

    def residual(self, Uu):
        return self.K @ Uu + Uu ** 3 - self.p

    def hessian(self, Uu):
        return self.K + 3.0 * np.diag(Uu ** 2)

    def hessian_vec(self, Uu, w):
        return self.hessian(Uu) @ w

    def vec_jacobian_p2(self, Uu, lam):
        return (lam,)

def nonlinear_equation_solve(mechanicalEnergy, UuGuess, p, settings):
    mechanicalEnergy.p = p

    def newton(i, Uu):
        return Uu - np.linalg.solve(mechanicalEnergy.hessian(Uu), mechanicalEnergy.residual(Uu))
    return (jax.lax.fori_loop(0, settings['max_iters'], newton, UuGuess), True)

@partial(custom_vjp, nondiff_argnums=(0, 1))
def nonlinear_solve(mechanicalEnergy, settings, UuGuess, designParams):
    return nonlinear_equation_solve(mechanicalEnergy, UuGuess, designParams, settings)[0]

def nonlinear_solve_f(mechanicalEnergy, settings, UuGuess, designParams):
    Uu = nonlinear_solve(mechanicalEnergy, settings, UuGuess, designParams)
    return (Uu, (Uu, designParams))

def nonlinear_solve_b(mechanicalEnergy, settings, rdata, v):
    Uu, designParams = rdata
    mechanicalEnergy.p = designParams
    lam = np.linalg.solve(mechanicalEnergy.hessian(Uu), v)
    return (np.zeros_like(Uu) * v[0], mechanicalEnergy.vec_jacobian_p2(Uu, lam)[0])
nonlinear_solve.defvjp(nonlinear_solve_f, nonlinear_solve_b)
_SETTINGS = {'max_iters': 12}

def eval_fn(UuGuess, designParams):
    energy = Energy(onp.zeros(3, onp.float32))
    Uu = nonlinear_solve(energy, _SETTINGS, UuGuess, designParams)
    return Uu * np.array([1.0, -0.5, 2.0], np.float32)

def eval_inputs():
    return (onp.zeros(3, onp.float32), onp.array([0.4, -0.3, 0.7], onp.float32))

def _solve64(p):
    u = onp.zeros(3)
    for _ in range(40):
        u = u - onp.linalg.solve(_K + 3.0 * onp.diag(u ** 2), _K @ u + u ** 3 - p)
    return u

def eval_reference(UuGuess, designParams):
    return _solve64(onp.asarray(designParams, onp.float64)) * onp.array([1.0, -0.5, 2.0])

def linearize_usage(*args):
    argnums = (1,)

    def along(*diff):
        full = list(args)
        for p, v in zip(argnums, diff):
            full[p] = v
        return jnp.sum(eval_fn(*full))
    diff = tuple((jnp.asarray(args[p], jnp.float32) for p in argnums))
    _, f_jvp = jax.linearize(along, *diff)
    return f_jvp(*[jnp.ones_like(x) for x in diff])

def eval_custom():
    args = tuple(eval_inputs())
    return {'linearize_usage': lambda: (linearize_usage(*args), None)[1]}
