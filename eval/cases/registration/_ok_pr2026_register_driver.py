"""Setup module for ok_pr2026_defvjp_in_other_module_xmod: registers the library's rules."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_pr2026_defvjp_in_other_module_xmod import (doubled_sin, external_sin, external_sin_bwd,  # noqa: E402
                                                   external_sin_fwd)

external_sin.defvjp(external_sin_fwd, external_sin_bwd)


def eval_fn(x):
    return doubled_sin(x)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    return 2.0 * np.sin(np.float64(x))
