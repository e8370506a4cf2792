"""Run every census script in `errors/` in one process and record what JAX does.

`python jax_errors.py` (JAX_PLATFORMS=cpu) writes `out/jax_errors.txt`: a header with the versions,
then one line per script, `NAME: OUTCOME`, where OUTCOME is `RAISE <class>: <first line>`,
`WARN <class>: <first line>` (the script ran but warned), or `RUNS`. The census
(`../jax-errors.md`) quotes these lines; `tests/unit/test_jax_errors_census.py` checks each row's
message against them without importing JAX.
"""

from __future__ import annotations

import os
import pathlib
import re
import runpy
import sys
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAX_TRACEBACK_FILTERING", "off")

HERE = pathlib.Path(__file__).resolve().parent


def first_line(exc: BaseException) -> str:
    """The message's first line, joined with the second when the first ends in a colon."""
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not text:
        return ""
    head = text[0] + (" " + text[1] if text[0].endswith(":") and len(text) > 1 else "")
    return re.sub(r"0x[0-9a-f]+", "0x...", head)[:240]  # object addresses change from run to run


def run_one(path: pathlib.Path) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            runpy.run_path(str(path), run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - recording what JAX raises is the point
            return f"RAISE {type(exc).__name__}: {first_line(exc)}"
    for w in caught:
        if issubclass(w.category, (UserWarning, DeprecationWarning, RuntimeWarning, FutureWarning)):
            text = str(w.message).strip().splitlines()
            return f"WARN {w.category.__name__}: {text[0][:240] if text else ''}"
    return "RUNS"


def main() -> int:
    import jax

    parts = [f"jax {jax.__version__}"]
    for name in ("jaxlib", "flax", "equinox"):
        try:
            parts.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            pass
    lines = [f"# {', '.join(parts)}; CPython {sys.version.split()[0]}; CPU"]
    for path in sorted((HERE / "errors").glob("e*.py")):
        lines.append(f"{path.stem}: {run_one(path)}")
        print(lines[-1], flush=True)
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "jax_errors.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
