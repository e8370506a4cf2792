"""qwix: a quantized dot_general as a custom_vjp made with
`functools.partial(jax.custom_vjp, nondiff_argnums=(4,))`: the dimension numbers (position 4) are
static, the calibrations and the configuration (a static pytree) are ordinary arguments whose
cotangents the bwd gives as None. The fwd quantizes each operand that has a calibration and keeps
both the original and the quantized operands as residuals; the bwd multiplies the cotangent by the
other (quantized) operand and clips each gradient to its operand's calibration range
(a straight-through estimator: the rounding is not differentiated).

Adapted from google/qwix:qwix/_src/core/dot_general_qt.py:340 (QArray is replaced by symmetric
int8 fake quantization with an `absmax` calibration; the dimension numbers are a plain matrix
product, so the backward dot_generals are written with `.T`; the fwd's interception decorator is
dropped; the library's frozen dataclass configuration, a pytree whose only children are two noise
functions that default to None, is a hashable class registered with
`jax.tree_util.register_static` here: a pytree without leaves either way). The module gives the
gradient the rule means (`eval_grad_reference`).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/creator_swapped/qwix_dot_general_qt', 'family': 'mutation', 'expect': 'unknown', 'library': 'qwix', 'source': 'google/qwix:qwix/_src/core/dot_general_qt.py:340', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'creator_swapped', 'base': 'qwix_dot_general_qt'}

class DotGeneralQtConfig:

    def __init__(self, lhs_qtype='int8', rhs_qtype='int8', disable_gradient_clipping=False):
        self.lhs_qtype = lhs_qtype
        self.rhs_qtype = rhs_qtype
        self.disable_gradient_clipping = disable_gradient_clipping

    def _key(self):
        return (self.lhs_qtype, self.rhs_qtype, self.disable_gradient_clipping)

    def __eq__(self, other):
        return isinstance(other, DotGeneralQtConfig) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())
jax.tree_util.register_static(DotGeneralQtConfig)

def _quantize(x, calibration):
    scale = calibration['absmax'] / 127.0
    return jnp.clip(jnp.round(x / scale), -127, 127) * scale

def _clip_gradient_to_calibration(grad, x, calibration):
    return jnp.where(jnp.abs(x) <= calibration['absmax'], grad, jnp.zeros_like(grad))

def dot_general_qt_fwd(lhs, rhs, lhs_calibration, rhs_calibration, dimension_numbers, config):
    """Forward pass for dot_general_qt custom VJP."""
    lhs_in, rhs_in = (lhs, rhs)
    if lhs_calibration is not None:
        lhs = _quantize(lhs, lhs_calibration)
    if rhs_calibration is not None:
        rhs = _quantize(rhs, rhs_calibration)
    residuals = (lhs_in, rhs_in, lhs, rhs, lhs_calibration, rhs_calibration, config)
    return (lax.dot_general(lhs, rhs, dimension_numbers), residuals)

def dot_general_qt_bwd(fwd_dimension_numbers, residuals, g):
    """Backward pass for dot_general_qt custom VJP."""
    lhs_in, rhs_in, lhs, rhs, lhs_calibration, rhs_calibration, config = residuals
    dlhs = g @ rhs.T
    drhs = lhs.T @ g
    if not config.disable_gradient_clipping:
        if lhs_calibration is not None:
            dlhs = _clip_gradient_to_calibration(dlhs, lhs_in, lhs_calibration)
        if rhs_calibration is not None:
            drhs = _clip_gradient_to_calibration(drhs, rhs_in, rhs_calibration)
    return (dlhs, drhs, None, None, None)

@functools.partial(jax.custom_jvp, nondiff_argnums=(4,))
def dot_general_qt_fwd_bwd(lhs, rhs, lhs_calibration, rhs_calibration, dimension_numbers, config):
    """dot_general custom VJP."""
    result, _ = dot_general_qt_fwd(lhs, rhs, lhs_calibration, rhs_calibration, dimension_numbers, config)
    return result
dot_general_qt_fwd_bwd.defvjp(dot_general_qt_fwd, dot_general_qt_bwd)

def eval_fn(lhs, rhs):
    lhs_cal = {'absmax': jnp.full((), 2.0, lhs.dtype)}
    rhs_cal = {'absmax': jnp.full((), 1.5, rhs.dtype)}
    return dot_general_qt_fwd_bwd(lhs, rhs, lhs_cal, rhs_cal, (((1,), (0,)), ((), ())), DotGeneralQtConfig())

def eval_inputs():
    lhs = np.array([[0.31, -1.2, 0.77], [1.9, 0.05, -0.6]], np.float32)
    rhs = np.array([[0.4, -0.9], [1.1, 0.25], [-0.35, 0.8]], np.float32)
    return (lhs, rhs)

def _fake_quant(x, absmax):
    scale = absmax / 127.0
    return np.clip(np.round(np.asarray(x, np.float64) / scale), -127, 127) * scale

def eval_reference(lhs, rhs):
    return _fake_quant(lhs, 2.0) @ _fake_quant(rhs, 1.5)

def eval_grad_reference(lhs, rhs):
    g = np.ones((np.shape(lhs)[0], np.shape(rhs)[1]))
    dlhs = g @ _fake_quant(rhs, 1.5).T * (np.abs(np.asarray(lhs, np.float64)) <= 2.0)
    drhs = _fake_quant(lhs, 2.0).T @ g * (np.abs(np.asarray(rhs, np.float64)) <= 1.5)
    return (dlhs, drhs)
