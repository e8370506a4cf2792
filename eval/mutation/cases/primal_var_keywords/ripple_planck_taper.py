"""ripple (ripplegw, gravitational waveforms): the Planck taper of the NRTidalv2 tidal amplitude,
`get_planck_taper(x, y)`, 1 below the merger frequency `y`, 0 above `1.2 * y`, and a smooth
logistic step between, as a bare module-level `@jax.custom_jvp` (nested `jnp.where`s over the
frequency grid `x`). Its derivative is registered with `defjvps` in a statement:
`get_planck_taper.defjvps(None, lambda y_dot, primal_out, x, y: get_planck_taper_der(x, y) *
y_dot)`: `None` for the frequencies (a grid, never differentiated: its tangent is taken as
zero) and a lambda for the merger frequency that calls a module-level function computing the
closed-form derivative, itself a nested `jnp.where` followed by `jnp.nan_to_num` (the formula
divides by zero at the window's ends, where the other branches are selected).

Adapted from tedwards2412/ripple:src/ripplegw/waveforms/IMRPhenomD_NRTidalv2.py:24 (commit
58c5302), with `_get_merger_frequency` (:287) and the taper's use in
`_gen_IMRPhenomD_NRTidalv2` (:372, `A_P = get_planck_taper(f, f_merger)`, the amplitude
`A_P * (bbh_amp + A_T)`) of the same file; the constants of src/ripplegw/constants.py. Changed:
the merger frequency takes the two masses and `kappa` directly (the library unpacks a
six-parameter `theta` and computes `kappa` from the tidal deformabilities); the baseline
amplitude and the tidal amplitude are replaced by a fixed `f**(-7/6)` amplitude. The caller
differentiates the masses and `kappa` (through the merger frequency); the frequency grid is
fixed, as in the library, and holds no point at the window's ends.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/primal_var_keywords/ripple_planck_taper', 'family': 'mutation', 'expect': 'unknown', 'library': 'ripple', 'source': 'tedwards2412/ripple:src/ripplegw/waveforms/IMRPhenomD_NRTidalv2.py:24', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'primal_var_keywords', 'base': 'ripple_planck_taper'}
PI = 3.141592653589793
TWO_PI = 6.283185307179586
MSUN = 1.9884099021470415e+30
G = 6.6743e-11
C = 299792458.0
gt = G * MSUN / C ** 3.0

@jax.custom_jvp
def get_planck_taper(x, y: float, **options):
    """Planck taper over the frequencies `x`, starting at `y` and ending at `1.2 * y`."""
    a = 1.2
    yp = a * y
    return jnp.where(x < y, 1.0, jnp.where(x > yp, 0.0, 1.0 - 1.0 / (jnp.exp((yp - y) / (x - y) + (yp - y) / (x - yp)) + 1.0)))

def get_planck_taper_der(x, y: float):
    """Derivative of the Planck taper with respect to its starting point `y`."""
    a = 1.2
    yp = a * y
    tangent_out = jnp.where(x < y, 0.0, jnp.where(x > yp, 0.0, jnp.exp((yp - y) / (x - y) + (yp - y) / (x - yp)) * ((-1.0 + a) / (x - y) + (-1.0 + a) / (x - yp) + (-y + yp) / (x - y) ** 2 + 1.2 * (-y + yp) / (x - yp) ** 2) / (jnp.exp((yp - y) / (x - y) + (yp - y) / (x - yp)) + 1.0) ** 2))
    tangent_out = jnp.nan_to_num(tangent_out)
    return tangent_out
get_planck_taper.defjvps(None, lambda y_dot, primal_out, x, y: get_planck_taper_der(x, y) * y_dot)

def get_merger_frequency(m1, m2, kappa):
    """Merger frequency in Hz (NRTidalv2, eq. (11) of arXiv:1804.02235)."""
    M = m1 + m2
    q = m1 * gt / (m2 * gt)
    kappa_2 = kappa * kappa
    a_0 = 0.3586
    n_1 = 0.0335411203
    n_2 = 4.31460284e-05
    d_1 = 0.0754224145
    d_2 = 0.000223626859
    num = 1.0 + n_1 * kappa + n_2 * kappa_2
    den = 1.0 + d_1 * kappa + d_2 * kappa_2
    Q_0 = a_0 * q ** (-1.0 / 2.0)
    Momega_merger = Q_0 * (num / den)
    return Momega_merger / (M * gt) / TWO_PI
FREQS = np.array([1500.0, 1900.0, 1950.0, 2020.0, 2120.0, 2350.0, 2480.0, 2900.0], np.float32)

def eval_fn(masses, kappa):
    f_merger = get_merger_frequency(masses[..., 0], masses[..., 1], kappa)
    A_P = get_planck_taper(FREQS, f_merger, verbose=False)
    return A_P * (FREQS / 1000.0) ** (-7.0 / 6.0)

def eval_inputs():
    return (np.array([1.4, 1.3], np.float32), np.array(100.0, np.float32))

def eval_reference(masses, kappa):
    masses, kappa = (np.asarray(masses, np.float64), np.asarray(kappa, np.float64))
    m1, m2 = (masses[..., 0], masses[..., 1])
    q = m1 / m2
    num = 1.0 + 0.0335411203 * kappa + 4.31460284e-05 * kappa ** 2
    den = 1.0 + 0.0754224145 * kappa + 0.000223626859 * kappa ** 2
    y = 0.3586 * q ** (-0.5) * (num / den) / ((m1 + m2) * gt) / (2 * np.pi)
    x = FREQS.astype(np.float64)
    yp = 1.2 * y
    with np.errstate(divide='ignore', over='ignore', invalid='ignore'):
        mid = 1.0 - 1.0 / (np.exp((yp - y) / (x - y) + (yp - y) / (x - yp)) + 1.0)
    taper = np.where(x < y, 1.0, np.where(x > yp, 0.0, mid))
    return taper * (x / 1000.0) ** (-7.0 / 6.0)
