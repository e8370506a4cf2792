"""Neural Pfaffians (neural-network wave functions for molecules, n-gao): the sign and log of the
Pfaffian of a skew-symmetric matrix, `slog_pfaffian(A)`, as a custom_jvp written
`@functools.partial(jax.custom_jvp)` (a `partial` with no keyword) stacked over
`@functools.partial(jnp.vectorize, signature='(n,n)->(),()', excluded=frozenset({1}))`, so that
the custom function maps over leading batch axes; it returns a pair `(sign, log)` computed by a
Python loop of Householder reductions, with an early return for odd sizes. The rule
`@slog_pfaffian.defjvp def slog_pfaffian_jvp(primals, tangents)` calls the custom function,
takes `d log|Pf A| = tr(A^-1 dA) / 2` with an einsum over the batched inverse, and returns the
pair of pairs `((sign, log), (zeros_like(sign), log_dot))`. After registration the name is
rebound to its jitted version, `slog_pfaffian = jit(slog_pfaffian)`. The caller is the
wave function's `to_slog_psi` for an odd number of electrons: the skew product of the orbitals
with an antisymmetrizer, padded with a fill row and column (`block`), the Pfaffian of each
determinant, and a signed `logsumexp` over the determinants.

Adapted from n-gao/neural-pfaffian:src/neural_pfaffian/linalg.py:30 (commit f711f08), with the
caller `PfaffianAntisymmetrizer.to_slog_psi` of src/neural_pfaffian/nn/antisymmetrizer/pfaffian.py
:260 and the padding above it (:252). Changed: the library's own `jit` wrapper
(neural_pfaffian/utils/jax_utils.py, a `functools.wraps` around `jax.jit`) is `jax.jit`; the
orbitals come as an input array instead of from the network; the antisymmetrizer is a fixed
skew-symmetric matrix; `block` is written with `jnp.concatenate`; the custom function's cast
to float64 and back is dropped (x64 is off in the evaluation: JAX would warn and stay in
float32). The caller differentiates the orbitals and the fill vector.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
from jax import jit
EVAL = {'id': 'mutation/jit_under_creator/neuralpfaffian_slog_pfaffian', 'family': 'mutation', 'expect': 'unknown', 'library': 'neural-pfaffian', 'source': 'n-gao/neural-pfaffian:src/neural_pfaffian/linalg.py:30', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jit_under_creator', 'base': 'neuralpfaffian_slog_pfaffian'}

@jit
def householder(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    x0 = x[0]
    x_norm_squared = jnp.dot(x, x)
    x_norm = jnp.sqrt(x_norm_squared)
    sign = jnp.sign(x0)
    alpha = -sign * x_norm
    v = x - jnp.array([alpha] + [0] * (x.shape[0] - 1), dtype=x.dtype)
    v_rnorm = jax.lax.rsqrt(x_norm_squared - 2 * x0 * alpha + alpha * alpha)
    v *= v_rnorm
    return (v, sign, alpha)

@functools.partial(jax.custom_jvp)
@jax.jit
@functools.partial(jnp.vectorize, signature='(n,n)->(),()', excluded=frozenset({1}))
def slog_pfaffian(A: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Sign and log of the Pfaffian of a skew-symmetric A (Householder reductions)."""
    A = jnp.asarray(A)
    dtype = A.dtype
    n = A.shape[0]
    if n % 2 == 1:
        return (jnp.ones((), dtype=dtype), jnp.array(-jnp.inf, dtype=dtype))
    sign_pfaffian = jnp.ones((), dtype=dtype)
    log_pfaffian = jnp.zeros((), dtype=dtype)
    for i in range(n - 2):
        v, sign, alpha = householder(A[1:, 0])
        vw = 2 * jnp.einsum('a,bc,c->ab', v, A[1:, 1:], v)
        delta = vw - vw.mT
        A = A[1:, 1:] + delta
        if i % 2 == 0:
            sign_pfaffian *= sign
            log_pfaffian += jnp.log(jnp.abs(alpha))
    sign_pfaffian *= jnp.sign(A[-2, -1])
    log_pfaffian += jnp.log(jnp.abs(A[-2, -1]))
    return (sign_pfaffian, log_pfaffian)

@slog_pfaffian.defjvp
def slog_pfaffian_jvp(primals, tangents):
    A, = primals
    A_dot, = tangents
    sign_pfaffian, log_pfaffian = slog_pfaffian(A)
    det_dot = jnp.einsum('...ij,...ji->...', jnp.linalg.inv(A), A_dot)
    sign_dot = jnp.zeros_like(sign_pfaffian)
    pfaffian_dot = det_dot / 2
    return ((sign_pfaffian, log_pfaffian), (sign_dot, pfaffian_dot))
slog_pfaffian = jit(slog_pfaffian)

def block(A, B, C, D):
    """[[A, B], [C, D]] with the batch axes of A broadcast onto the others."""
    batch = A.shape[:-2]
    B = jnp.broadcast_to(B[..., :, None], (*batch, A.shape[-2], 1))
    C = jnp.broadcast_to(C[..., None, :], (*batch, 1, A.shape[-1]))
    D = jnp.broadcast_to(D, (*batch, 1, 1))
    return jnp.concatenate([jnp.concatenate([A, B], axis=-1), jnp.concatenate([C, D], axis=-1)], axis=-2)
ANTISYMMETRIZER = np.array([[0.0, 0.9, -0.4, 0.3], [-0.9, 0.0, 0.6, -0.2], [0.4, -0.6, 0.0, 1.1], [-0.3, 0.2, -1.1, 0.0]], np.float32)

def eval_fn(orbitals, fill):
    orb_A_orb_product = jnp.einsum('...ab,bc,...dc->...ad', orbitals, ANTISYMMETRIZER, orbitals)
    orb_A_orb_product = block(orb_A_orb_product, fill, -fill, jnp.zeros((), dtype=fill.dtype))
    sign, logpsi = slog_pfaffian(orb_A_orb_product)
    logpsi, sign = jax.nn.logsumexp(logpsi, axis=-1, b=sign, return_sign=True)
    return logpsi

def eval_inputs():
    orbitals = np.array([[[1.0, 0.2, -0.3, 0.5], [0.1, 0.9, 0.4, -0.2], [-0.4, 0.3, 1.2, 0.1]], [[0.6, -0.5, 0.2, 0.3], [0.3, 0.7, -0.1, 0.8], [0.2, -0.2, 0.5, 1.0]]], np.float32)
    fill = np.array([0.7, -0.4, 0.5], np.float32)
    return (orbitals, fill)

def _pf4(M):
    return M[..., 0, 1] * M[..., 2, 3] - M[..., 0, 2] * M[..., 1, 3] + M[..., 0, 3] * M[..., 1, 2]

def eval_reference(orbitals, fill):
    phi, f = (np.asarray(orbitals, np.float64), np.asarray(fill, np.float64))
    P = np.einsum('...ab,bc,...dc->...ad', phi, ANTISYMMETRIZER.astype(np.float64), phi)
    M = np.zeros(P.shape[:-2] + (4, 4))
    M[..., :3, :3] = P
    M[..., :3, 3] = f[..., None, :]
    M[..., 3, :3] = -f[..., None, :]
    return np.log(np.abs(_pf4(M).sum(-1)))
