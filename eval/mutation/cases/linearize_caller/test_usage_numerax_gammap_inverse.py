"""Usage test of `numerax_gammap_inverse` (written by eval/mutation/usage_tests.py): its usage function, once, eagerly."""
import importlib.util
import pathlib
import sys


def test_usage():
    path = pathlib.Path(__file__).with_name("numerax_gammap_inverse.py")
    spec = importlib.util.spec_from_file_location("usage_" + str(abs(hash(str(path.resolve())))), path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.eval_fn(*module.eval_inputs())
