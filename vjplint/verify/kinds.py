"""What each fix kind's original does on JAX, as the harness checks it (docs/verify.md).

The residual-plus-None rewrite (VJP101/VJP102) has its own checks (the moved arguments traced,
`UnexpectedTracerError` as the hazard). Every other fix is checked as a *rewrite*: the rewrite
must run under every transformation and equal the original wherever the original runs, except
where the rule says the original is silently wrong; the hazard is what the original does
instead. Measured on JAX 0.10.2 with `fixtures/fix_small/` and `fixtures/fix_structure/`.
"""

from typing import Dict

# "raises": the original raises (at import, or under some transformation) and the rewrite does
# not; "wrong": the original may also run and give other gradients (a straight-through gradient
# silently 0): where a gradient differs that is the hazard, not a failure of the rewrite (values
# under eager, jit and vmap must still be the original's); "none": the
# rule describes no runtime failure on this JAX (a no-op setting deleted): the rewrite must equal
# the original everywhere.
EXPECTED: Dict[str, str] = {
    "VJP103": "raises", "VJP201": "raises", "VJP301": "raises", "VJP306": "raises", "VJP307": "raises",
    "VJP309": "raises", "VJP312": "raises", "VJP319": "raises", "VJP323": "raises", "VJP401": "none",
    "VJP402": "wrong",
}


def expectation(codes) -> str:
    """The weakest claim among the codes fixed in one target: "wrong" allows differences."""
    kinds = {EXPECTED.get(c, "raises") for c in codes}
    return "wrong" if "wrong" in kinds else "raises" if "raises" in kinds else "none"
