"""Caller for pr2026_rules_beside_no_defvjp_xmod: imports the library by name and calls it."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pr2026_rules_beside_no_defvjp_xmod import external_cos  # noqa: E402


def eval_fn(x):
    return external_cos(x)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    return np.cos(np.float64(x))
