"""qpax (differentiable quadratic programs in JAX, Kevin Tracy): `solve_qp_primal(Q, q, A, b, G,
h, solver_tol=1e-5, target_kappa=1e-3)`, a bare module-level `@jax.custom_vjp` over the six
problem arrays of min 0.5 x'Qx + q'x s.t. Ax = b, Gx <= h and two Python-float settings with
defaults (not `nondiff_argnums`: they are ordinary arguments whose cotangents bwd returns as
`None`). The primal solves the QP with a primal-dual interior-point method and returns x; fwd
solves it, then relaxes the solution by Newton steps on the KKT system with complementarity
s*z = target_kappa (smoothed derivatives at active constraints) and saves the six arrays and the
relaxed primal-dual point as a flat 10-tuple; bwd `solve_qp_primal_backward(res, input_grad)`
unpacks that tuple and returns `(*diff_qp(...), None, None)`: the six OptNet cotangents from one
linear solve with the KKT matrix at the relaxed point, splatted into the returned tuple, and
`None` for the two settings. Registered by the statement
`solve_qp_primal.defvjp(solve_qp_primal_forward, solve_qp_primal_backward)`. The caller is a
long-only Markowitz portfolio (weights summing to one, non-negative), its covariance from a
factor matrix and its expected returns differentiated through the optimal weights, called with
`target_kappa=` by keyword as qpax's users tune the smoothing.

Adapted from kevin-tracy/qpax:qpax/diff_qp.py:49 (commit 53df513), with `diff_qp` and
`optnet_derivatives` of the same file (:20, :8) and the usage of examples/diff_qp.py. Changed:
qpax's PDIP (qpax/pdip.py: Mehrotra predictor-corrector with a reduced, QR-factorised KKT
system) and its relaxation (qpax/pdip_relaxed.py) are a short path-following interior-point
loop under `lax.while_loop` and Newton steps under `lax.fori_loop` that solve the full KKT
matrix densely; `diff_qp` solves the OptNet adjoint system with that dense matrix instead of the
reused factorisation (the same solution); the G cotangent is written from the unscaled dual
differential.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/vectorize_under_creator/qpax_solve_qp_primal', 'family': 'mutation', 'expect': 'unknown', 'library': 'qpax', 'source': 'kevin-tracy/qpax:qpax/diff_qp.py:49', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'vectorize_under_creator', 'base': 'qpax_solve_qp_primal'}

def _newton_direction(Q, A, G, x, s, z, y, r1, r2, r3, r4):
    """Solve the linearised KKT system for (dx, ds, dz, dy):
    Q dx + G'dz + A'dy = -r1,  z*ds + s*dz = -r2,  G dx + ds = -r3,  A dx = -r4."""
    n, m, p = (Q.shape[0], G.shape[0], A.shape[0])
    K = jnp.block([[Q, jnp.zeros((n, m)), G.T, A.T], [jnp.zeros((m, n)), jnp.diag(z), jnp.diag(s), jnp.zeros((m, p))], [G, jnp.eye(m), jnp.zeros((m, m)), jnp.zeros((m, p))], [A, jnp.zeros((p, m)), jnp.zeros((p, m)), jnp.zeros((p, p))]])
    d = jnp.linalg.solve(K, -jnp.concatenate([r1, r2, r3, r4]))
    return jnp.split(d, [n, n + m, n + 2 * m])

def _max_step(v, dv):
    """Largest alpha <= 1 with v + alpha dv >= 0."""
    return jnp.minimum(1.0, jnp.min(jnp.where(dv < 0, -v / dv, jnp.inf)))

def _residuals(Q, q, A, b, G, h, x, s, z, y, mu):
    return (Q @ x + q + G.T @ z + A.T @ y, s * z - mu, G @ x + s - h, A @ x - b)

def solve_qp(Q, q, A, b, G, h, solver_tol=1e-05, max_iters=60):
    """Path-following primal-dual interior point: (x, s, z, y, converged, iters)."""
    n, m, p = (Q.shape[0], G.shape[0], A.shape[0])
    init = (jnp.zeros(n, Q.dtype), jnp.ones(m, Q.dtype), jnp.ones(m, Q.dtype), jnp.zeros(p, Q.dtype), 0)

    def gap(state):
        x, s, z, y, _ = state
        r1, _, r3, r4 = _residuals(Q, q, A, b, G, h, x, s, z, y, 0.0)
        return jnp.maximum(jnp.dot(s, z) / m, jnp.max(jnp.abs(jnp.concatenate([r1, r3, r4]))))

    def cond(state):
        return (gap(state) > solver_tol) & (state[4] < max_iters)

    def body(state):
        x, s, z, y, it = state
        mu = 0.1 * jnp.dot(s, z) / m
        dx, ds, dz, dy = _newton_direction(Q, A, G, x, s, z, y, *_residuals(Q, q, A, b, G, h, x, s, z, y, mu))
        alpha = 0.99 * jnp.minimum(_max_step(s, ds), _max_step(z, dz))
        return (x + alpha * dx, s + alpha * ds, z + alpha * dz, y + alpha * dy, it + 1)
    x, s, z, y, iters = jax.lax.while_loop(cond, body, init)
    return (x, s, z, y, gap((x, s, z, y, iters)) <= solver_tol, iters)

def relax_qp(Q, q, A, b, G, h, x, s, z, y, solver_tol=1e-05, target_kappa=0.001, iters=12):
    """Newton steps on the KKT system with s*z = target_kappa, from the solution."""
    s = jnp.maximum(s, jnp.sqrt(target_kappa))
    z = jnp.maximum(z, jnp.sqrt(target_kappa))

    def body(_, state):
        x, s, z, y = state
        dx, ds, dz, dy = _newton_direction(Q, A, G, x, s, z, y, *_residuals(Q, q, A, b, G, h, x, s, z, y, target_kappa))
        alpha = jnp.minimum(1.0, 0.99 * jnp.minimum(_max_step(s, ds), _max_step(z, dz)))
        return (x + alpha * dx, s + alpha * ds, z + alpha * dz, y + alpha * dy)
    x, s, z, y = jax.lax.fori_loop(0, iters, body, (x, s, z, y))
    return (x, s, z, y, True, iters)

def optnet_derivatives(dz, dlam, dnu, z, lam, nu):
    dl_dQ = 0.5 * (jnp.outer(dz, z) + jnp.outer(z, dz))
    dl_dA = jnp.outer(dnu, z) + jnp.outer(nu, dz)
    dl_dG = jnp.outer(lam * dlam, z) + jnp.outer(lam, dz)
    dl_dq = dz
    dl_db = -dnu
    dl_dh = -lam * dlam
    return (dl_dQ, dl_dq, dl_dA, dl_db, dl_dG, dl_dh)

def diff_qp(Q, q, A, b, G, h, z, s, lam, nu, dl_dz):
    """OptNet adjoint at the (relaxed) point: x = z, slacks s, inequality duals lam, equality nu."""
    n, m, p = (Q.shape[0], G.shape[0], A.shape[0])
    K = jnp.block([[Q, G.T, A.T], [lam[:, None] * G, jnp.diag(-s), jnp.zeros((m, p))], [A, jnp.zeros((p, m)), jnp.zeros((p, p))]])
    d = jnp.linalg.solve(K.T, jnp.concatenate([-dl_dz, jnp.zeros(m + p, dl_dz.dtype)]))
    dz, dlam, dnu = jnp.split(d, [n, n + m])
    return optnet_derivatives(dz, dlam, dnu, z, lam, nu)

@jax.custom_vjp
@jnp.vectorize
def solve_qp_primal(Q, q, A, b, G, h, solver_tol=1e-05, target_kappa=0.001):
    x, s, z, y, converged, iters1 = solve_qp(Q, q, A, b, G, h, solver_tol=solver_tol)
    return x

def solve_qp_primal_forward(Q, q, A, b, G, h, solver_tol=1e-05, target_kappa=0.001):
    x, s, z, y, converged1, iters1 = solve_qp(Q, q, A, b, G, h, solver_tol=solver_tol)
    xr, sr, zr, yr, converged2, iters2 = relax_qp(Q, q, A, b, G, h, x, s, z, y, solver_tol=solver_tol, target_kappa=target_kappa)
    return (x, (Q, q, A, b, G, h, xr, sr, zr, yr))

def solve_qp_primal_backward(res, input_grad):
    Q, q, A, b, G, h, xr, sr, zr, yr = res
    return (*diff_qp(Q, q, A, b, G, h, xr, sr, zr, yr, input_grad), None, None)
solve_qp_primal.defvjp(solve_qp_primal_forward, solve_qp_primal_backward)
RISK_AVERSION = 2.0

def portfolio_weights(factors, expected_returns):
    """Long-only mean-variance weights: min (gamma/2) w'Sw - mu'w, sum w = 1, w >= 0."""
    n = factors.shape[1]
    Q = RISK_AVERSION * (factors.T @ factors + 0.05 * jnp.eye(n))
    q = -expected_returns
    A = jnp.ones((1, n))
    b = jnp.ones(1)
    G = -jnp.eye(n)
    h = jnp.zeros(n)
    return solve_qp_primal(Q, q, A, b, G, h, solver_tol=1e-06, target_kappa=1e-05)

def eval_fn(factors, expected_returns):
    return portfolio_weights(factors, expected_returns)

def eval_inputs():
    factors = np.array([[0.5, 0.2, -0.1, 0.3], [0.1, 0.6, 0.2, -0.2], [-0.3, 0.1, 0.4, 0.2]], np.float32)
    expected_returns = np.array([0.3, 0.22, -0.25, 0.18], np.float32)
    return (factors, expected_returns)

def _np_qp(Q, q, A, b, G, h, iters=200):
    """The same path-following method in float64, run to a duality gap of ~1e-14."""
    n, m, p = (Q.shape[0], G.shape[0], A.shape[0])
    x, s, z, y = (np.zeros(n), np.ones(m), np.ones(m), np.zeros(p))
    for _ in range(iters):
        mu = 0.1 * s @ z / m
        r = [Q @ x + q + G.T @ z + A.T @ y, s * z - mu, G @ x + s - h, A @ x - b]
        if max(s @ z / m, np.abs(np.concatenate([r[0], r[2], r[3]])).max()) < 1e-14:
            break
        K = np.block([[Q, np.zeros((n, m)), G.T, A.T], [np.zeros((m, n)), np.diag(z), np.diag(s), np.zeros((m, p))], [G, np.eye(m), np.zeros((m, m)), np.zeros((m, p))], [A, np.zeros((p, m)), np.zeros((p, m)), np.zeros((p, p))]])
        dx, ds, dz, dy = np.split(np.linalg.solve(K, -np.concatenate(r)), [n, n + m, n + 2 * m])

        def step(v, dv):
            neg = dv < 0
            return min(1.0, (-v[neg] / dv[neg]).min()) if neg.any() else 1.0
        alpha = 0.99 * min(step(s, ds), step(z, dz))
        x, s, z, y = (x + alpha * dx, s + alpha * ds, z + alpha * dz, y + alpha * dy)
    return x

def eval_reference(factors, expected_returns):
    F, mu = (np.asarray(factors, np.float64), np.asarray(expected_returns, np.float64))
    n = F.shape[1]
    Q = RISK_AVERSION * (F.T @ F + 0.05 * np.eye(n))
    return _np_qp(Q, -mu, np.ones((1, n)), np.ones(1), -np.eye(n), np.zeros(n))
