"""forward-mode hazard: jax.hessian through an implicitly differentiated (custom_vjp) ridge solver.

Report: google/jaxopt#474 https://github.com/google/jaxopt/issues/474 ("custom_root with jvp rule
for forward and backward autodiff": hessian raised "can't apply forward-mode autodiff (jvp) to a
custom_vjp function" because the solver defines only a VJP).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/jaxopt474_hessian_solver", "family": "forward-mode", "expect": "hazard",
    "source": "google/jaxopt#474", "url": "https://github.com/google/jaxopt/issues/474",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["hessian"],
}
X = np.array([[1.0, 0.5], [0.2, 1.5], [0.3, -0.4]], np.float32)
Y = np.array([1.0, 2.0, 0.5], np.float32)


@jax.custom_vjp
def ridge(theta):
    return jnp.linalg.solve(X.T @ X + theta * jnp.eye(2), X.T @ Y)


def ridge_fwd(theta):
    w = ridge(theta)
    return w, (theta, w)


def ridge_bwd(res, g):
    theta, w = res
    # implicit function theorem: dw/dtheta = -(X^T X + theta I)^{-1} w
    u = jnp.linalg.solve(X.T @ X + theta * jnp.eye(2), g)
    return (-jnp.dot(u, w),)


ridge.defvjp(ridge_fwd, ridge_bwd)


def eval_fn(theta):
    return jnp.sum(ridge(theta) ** 2)


def outer_curvature(theta):
    return jax.hessian(eval_fn)(theta)  # eval: span


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(theta):
    a = X.T.astype(np.float64) @ X + np.float64(theta) * np.eye(2)
    w = np.linalg.solve(a, X.T.astype(np.float64) @ Y)
    return np.sum(w ** 2)
