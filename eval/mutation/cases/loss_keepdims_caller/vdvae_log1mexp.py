"""vdvae-jax (Jamie Townsend's JAX port of OpenAI's very deep VAE): `log1mexp(x) = log(1 -
exp(-x))` for x > 0, a bare `@custom_jvp` (imported as `from jax import custom_jvp`) whose
primal switches between `log1p(-exp(-x))` and `log(-expm1(-x))` at log 2 (Maechler's method)
with `jnp.where`, registered -- "workaround for NaN gradients" -- by the statement
`log1mexp.defjvps(lambda t, _, x: t / jnp.expm1(x))`: one lambda, parameters named `t`, `_`
(the primal output, unused) and `x`. The caller is the decoder's output distribution, the
discretized mixture of logistics of PixelCNN++ (`DmolNet.loglik`): a 1x1 convolution gives,
per pixel, the mixture logits and for each component and colour channel a mean, a softplus
inverse scale and an autoregressive coefficient (`logistic_preprocess`); `logistic_logpmf`
takes the probability of the 1/127.5-wide bin around each 8-bit colour value as
`log1mexp(inv_scales / 127.5) + top + bottom` in log space, with the edge bins (-1 and 1)
selected by `jnp.select`; `logistic_mix_logpmf` mixes with `logsumexp` and sums over the
image. The caller differentiates the log-likelihood in the decoder features and the 1x1
convolution's kernel.

Adapted from j-towns/vdvae-jax:vae_helpers.py:78 (`log1mexp`, and its registration at :87;
commit 9acc7ca), with `logistic_preprocess` (:33), `logistic_mix_logpmf` (:44),
`logistic_logpmf` (:55) and `DmolNet.loglik` (:96) of the same file. Changed: flax's `Conv1x1`
module (`nn.Conv` with a 1x1 kernel) is an einsum with an explicit kernel and bias, so
`DmolNet` holds the number of mixtures only; the batch dimension is left out.
"""
import jax.numpy as jnp
import numpy as np
from jax import custom_jvp
from jax import nn
from jax.scipy.special import logsumexp
import jax
EVAL = {'id': 'mutation/loss_keepdims_caller/vdvae_log1mexp', 'family': 'mutation', 'expect': 'unknown', 'library': 'vdvae-jax', 'source': 'j-towns/vdvae-jax:vae_helpers.py:78', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'loss_keepdims_caller', 'base': 'vdvae_log1mexp'}

def logistic_preprocess(nn_out):
    *batch, h, w, _ = nn_out.shape
    assert nn_out.shape[-1] % 10 == 0
    k = nn_out.shape[-1] // 10
    logit_weights, nn_out = jnp.split(nn_out, [k], -1)
    m, s, t = jnp.moveaxis(jnp.reshape(nn_out, tuple(batch) + (h, w, 3, k, 3)), (-2, -1), (-4, 0))
    assert m.shape == tuple(batch) + (k, h, w, 3)
    inv_scales = jnp.maximum(nn.softplus(s), 1e-07)
    return (m, jnp.tanh(t), inv_scales, jnp.moveaxis(logit_weights, -1, -3))

def logistic_mix_logpmf(nn_out, img):
    m, t, inv_scales, logit_weights = logistic_preprocess(nn_out)
    img = jnp.expand_dims(img, -4)
    mean_red = m[..., 0]
    mean_green = m[..., 1] + t[..., 0] * img[..., 0]
    mean_blue = m[..., 2] + t[..., 1] * img[..., 0] + t[..., 2] * img[..., 1]
    means = jnp.stack((mean_red, mean_green, mean_blue), axis=-1)
    logprobs = jnp.sum(logistic_logpmf(img, means, inv_scales), -1)
    log_mix_coeffs = logit_weights - logsumexp(logit_weights, -3, keepdims=True)
    return jnp.sum(logsumexp(log_mix_coeffs + logprobs, -3), (-2, -1))

def logistic_logpmf(img, means, inv_scales):
    centered = img - means
    top = -jnp.logaddexp(0, (centered - 1 / 255) * inv_scales)
    bottom = -jnp.logaddexp(0, -(centered + 1 / 255) * inv_scales)
    mid = log1mexp(inv_scales / 127.5) + top + bottom
    return jnp.select([img == -1, img == 1], [bottom, top], mid)

@custom_jvp
def log1mexp(x):
    """Accurate computation of log(1 - exp(-x)) for x > 0."""
    return jnp.where(x > jnp.log(2), jnp.log1p(-jnp.exp(-x)), jnp.log(-jnp.expm1(-x)))
log1mexp.defjvps(lambda t, _, x: t / jnp.expm1(x))

class DmolNet:
    """The decoder's output head: a 1x1 convolution to a discretized logistic mixture."""

    def __init__(self, num_mixtures):
        self.num_mixtures = num_mixtures

    def out_conv(self, px_z, kernel, bias):
        return jnp.einsum('hwc,cd->hwd', px_z, kernel) + bias

    def loglik(self, px_z, x, kernel, bias):
        return logistic_mix_logpmf(self.out_conv(px_z, kernel, bias), x)
OUT_NET = DmolNet(num_mixtures=2)
_rng = np.random.RandomState(4)
IMAGE = (np.array([[[0, 40, 255], [128, 200, 17]], [[255, 90, 0], [60, 61, 250]]]) / 127.5 - 1.0).astype(np.float32)
BIAS = (0.3 * _rng.normal(size=20)).astype(np.float32)

def eval_fn(px_z, kernel):
    return OUT_NET.loglik(px_z, IMAGE, kernel, BIAS)

def eval_inputs():
    rng = np.random.RandomState(9)
    px_z = rng.normal(size=(2, 2, 4)).astype(np.float32)
    kernel = (0.4 * rng.normal(size=(4, 20))).astype(np.float32)
    return (px_z, kernel)

def eval_reference(px_z, kernel):
    out = np.einsum('hwc,cd->hwd', np.asarray(px_z, np.float64), np.asarray(kernel, np.float64)) + BIAS
    k = 2
    logit_w = np.moveaxis(out[..., :k], -1, 0)
    rest = out[..., k:].reshape(2, 2, 3, k, 3)
    m, s, t = np.moveaxis(rest, (-2, -1), (1, 0))
    inv = np.maximum(np.logaddexp(0, s), 1e-07)
    t = np.tanh(t)
    img = IMAGE.astype(np.float64)[None]
    means = np.stack([m[..., 0], m[..., 1] + t[..., 0] * img[..., 0], m[..., 2] + t[..., 1] * img[..., 0] + t[..., 2] * img[..., 1]], axis=-1)
    c = img - means
    top = -np.logaddexp(0, (c - 1 / 255) * inv)
    bottom = -np.logaddexp(0, -(c + 1 / 255) * inv)
    mid = np.log(-np.expm1(-inv / 127.5)) + top + bottom
    lp = np.where(img == -1, bottom, np.where(img == 1, top, mid)).sum(-1)
    lw = logit_w - np.log(np.exp(logit_w).sum(0, keepdims=True))
    z = lw + lp
    zmax = z.max(0)
    return float(np.sum(zmax + np.log(np.exp(z - zmax).sum(0))))

def keepdims_loss_usage(*args):

    def loss(*a):
        return jnp.mean(eval_fn(*a), keepdims=True)
    return jax.grad(loss, argnums=(0, 1))(*args)

def keepdims_loss_usage_expected(*args):
    n = jnp.size(eval_fn(*args))
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args)
    return tuple((x / n for x in g))

def eval_custom():
    args = tuple(eval_inputs())
    return {'keepdims_loss_usage': lambda: (keepdims_loss_usage(*args), keepdims_loss_usage_expected(*args))}
