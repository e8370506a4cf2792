"""Write, beside each case of the mutation evaluation (bases/, heldout/, heldout2/, heldout3/, heldout4/, heldout5/, heldout6/, heldout7/, heldout8/, heldout9/, heldout10/, heldout11/, cases/OP/), a
small pytest test that calls its usage function once, eagerly, at its ordinary inputs, as a
user's unit test would (issue #44): `test_usage_<stem>.py`. `gradcheck_score.py --record` runs
`vjplint check-grads --record -- pytest` on them. The module is loaded by its path under a name
of its own (one pytest run holds many cases of the same stem).

    python eval/mutation/usage_tests.py          # (re)write every test
    python eval/mutation/usage_tests.py --check  # exit 1 when one is missing or stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = ("bases", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11", "cases")

TEMPLATE = '''\
"""Usage test of `{stem}` (written by eval/mutation/usage_tests.py): its usage function, once, eagerly."""
import importlib.util
import pathlib
import sys


def test_usage():
    path = pathlib.Path(__file__).with_name("{stem}.py")
    spec = importlib.util.spec_from_file_location("usage_" + str(abs(hash(str(path.resolve())))), path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.eval_fn(*module.eval_inputs())
'''


def cases():
    for name in SETS:
        for path in sorted((HERE / name).rglob("*.py")):
            if not path.name.startswith("test_usage_"):
                yield path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = 0
    for case in cases():
        test = case.with_name(f"test_usage_{case.stem}.py")
        text = TEMPLATE.format(stem=case.stem)
        if args.check:
            stale += not test.is_file() or test.read_text() != text
        elif not test.is_file() or test.read_text() != text:
            test.write_text(text)
    if args.check and stale:
        print(f"{stale} usage tests missing or stale: python eval/mutation/usage_tests.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
