"""scarlet2 (astronomical source separation, pmelchior): the log-probability of a score-matching
neural-network prior, `_log_prob(model, x)`, as `@partial(custom_vjp, nondiff_argnums=(0,))`
(imported `from jax import custom_vjp`) over the model (a wrapper of the score network and the
shape it accepts) and the image: the primal returns the constant `0.0` (the
normalised log-density is unknown), fwd computes the score (the gradient of the log-prior) with
the network and returns `0.0, score_func` (a bare array as the residual), and bwd `(model, res,
g)` returns `(g * score_func,)`, so that `jax.grad` of a posterior sees the prior's score. The
score helper zero-pads the image to the network's shape (even or uneven padding per axis),
adds a batch axis, runs the network, and crops the padding back. `ScorePrior`, a numpyro
`Distribution`, binds the network's extra arguments with `functools.partial` and its
`log_prob` calls `_log_prob(self._model, x)`; the caller adds it to a Gaussian likelihood (the
log-posterior of a fit).

The rule is deliberately not the derivative of the primal (a constant): it is the gradient the
prior means. `eval_grad_reference` gives that gradient: the likelihood's gradient plus the
score, in NumPy float64.

Adapted from pmelchior/scarlet2:src/scarlet2/nn.py:119 (commit e99243f), with `pad_fwd`,
`pad_back`, `calc_grad` and `ScorePrior` of the same file and the prior term of the fit's
log-posterior in src/scarlet2/infer.py:521. Changed: the trained score network is replaced by the
analytic score of a Gaussian prior (`-(x - mean) / t**2`, the temperature `t` bound as in the
library's `ScorePrior(prior, shape, t=temp)`); the numpyro distribution keeps only `log_prob`
and `__call__`; the wrapper is a plain class (the library's is an `equinox.Module`, a dataclass,
which needs its module in `sys.modules`, and the evaluation loads each module by path).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import numpyro.distributions.constraints as constraints
from jax import custom_vjp, vjp
EVAL = {'id': 'mutation/bwd_ct_reduced/scarlet2_score_log_prob', 'family': 'mutation', 'expect': 'unknown', 'library': 'scarlet2', 'source': 'pmelchior/scarlet2:src/scarlet2/nn.py:119', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_ct_reduced', 'base': 'scarlet2_score_log_prob'}

def pad_fwd(x, model_shape):
    """Zero-pads the image to the model's shape; returns it and the padding per axis."""
    assert all((model_shape[d] >= x.shape[d] for d in range(x.ndim))), 'Model size must be larger than data size'
    if model_shape == x.shape:
        pad = 0
        return (x, pad)
    pad = tuple(((int(gap / 2), int(gap / 2)) if (gap := (model_shape[d] - x.shape[d])) % 2 == 0 else (int(gap // 2), int(gap // 2) + 1) for d in range(x.ndim)))
    x = jnp.pad(x, pad, 'constant', constant_values=0)
    return (x, pad)

def pad_back(x, pad):
    """Removes the zero-padding of `pad_fwd`."""
    slices = tuple((slice(low, -hi) if hi > 0 else slice(low, None) for low, hi in pad))
    return x[slices]

def calc_grad(x, model):
    """The score (gradient of the log-prior) of the image under the model."""
    x_, pad = pad_fwd(jnp.float32(x), model.shape)
    if jnp.ndim(x) == len(model.shape):
        x_ = jnp.expand_dims(x_, axis=0)
    score_func = model.func(x_)
    if jnp.ndim(x) == len(model.shape):
        score_func = jnp.squeeze(score_func, axis=0)
    if pad != 0:
        score_func = pad_back(score_func, pad)
    return score_func

@partial(custom_vjp, nondiff_argnums=(0,))
def _log_prob(model, x):
    return 0.0

def _log_prob_fwd(model, x):
    score_func = calc_grad(x, model)
    return (0.0, score_func)

def _log_prob_bwd(model, res, g):
    score_func = res
    return (jnp.sum(g * score_func),)
_log_prob.defvjp(_log_prob_fwd, _log_prob_bwd)

class ScorePrior(dist.Distribution):

    class ScoreWrapper:

        def __init__(self, func, shape):
            self.func = func
            self.shape = shape
    support = constraints.real_vector
    _model = ScoreWrapper

    def __init__(self, model, shape, *args, **kwargs):
        """Score-matching prior: `model(x, *args, **kwargs)` is the score of `x`."""
        wrapper = ScorePrior.ScoreWrapper(partial(model.__call__, *args, **kwargs), shape)
        self._model = wrapper
        super().__init__(validate_args=None)

    def __call__(self, x):
        return self._model.func(x)

    def log_prob(self, x):
        return _log_prob(self._model, x)

class GaussianScoreNet:
    """Stand-in for a trained score network: the score of N(mean, t**2) per pixel."""

    def __init__(self, mean):
        self.mean = jnp.asarray(mean)

    def shape(self):
        return self.mean.shape

    def __call__(self, x, t=1.0):
        return -(x - self.mean) / t ** 2
MODEL_SHAPE = (6, 6)
PRIOR_MEAN = np.linspace(-0.5, 0.5, 36, dtype=np.float32).reshape(MODEL_SHAPE)
TEMPERATURE = 0.7
_net = GaussianScoreNet(PRIOR_MEAN)
PRIOR = ScorePrior(_net, _net.shape(), t=TEMPERATURE)
DATA = np.array([[0.1, 0.4, -0.2, 0.3], [0.0, 0.5, 0.2, -0.1], [0.3, -0.3, 0.1, 0.6], [-0.2, 0.2, 0.4, 0.0], [0.5, 0.1, -0.4, 0.2]], np.float32)
NOISE = 0.5

def eval_fn(image):
    log_like = -0.5 * jnp.sum((image - DATA) ** 2) / NOISE ** 2
    return log_like + PRIOR.log_prob(image)

def eval_inputs():
    return (DATA * 0.8 + 0.1,)

def eval_reference(image):
    x = np.asarray(image, np.float64)
    return -0.5 * np.sum((x - DATA) ** 2, axis=(-2, -1)) / NOISE ** 2

def eval_grad_reference(image):
    x = np.asarray(image, np.float64)
    mean = PRIOR_MEAN.astype(np.float64)[0:5, 1:5]
    return -(x - DATA) / NOISE ** 2 - (x - mean) / TEMPERATURE ** 2
