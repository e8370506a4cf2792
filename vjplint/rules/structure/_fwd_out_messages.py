"""VJP318's two longest messages, kept apart so that the rule module stays short."""

from __future__ import annotations


def other_node_message(label: str, quoted: str, got: str, want: str, name: str) -> str:
    """fwd's primal output is another pytree node (`got`) than the function's (`want`)."""
    return (f"{label} returns `{quoted}`, {got}, as its primal output, but `{name}` returns {want}: JAX needs "
            f"fwd's first element to have the decorated function's output structure, pytree nodes included, so "
            f"`grad(jit({name}))` raises `TypeError: Custom VJP fwd rule ... must produce a pair ... (equal to the "
            f"output of the custom_vjp-decorated function {name})` and a plain `grad` silently gives `{name}` fwd's "
            f"structure; build the output as `{name}` does ({want})")


def against_primal_message(label: str, got: str, why: str, why_primal: str, expected: str, expected_array: bool,
                           name: str) -> str:
    """fwd's primal output has another structure (`got`) than the primal's (`expected`)."""
    plain = (f"a plain `grad` sees fwd's {got} as `{name}`'s output instead (`Gradient only defined for "
             f"scalar-output functions`, or other values downstream)" if expected_array else
             f"a plain `grad` silently changes `{name}`'s output (indexing it then gives other values)")
    return (f"{label} returns {got} as its primal output ({why}), but {why_primal}, {expected}: JAX needs fwd's "
            f"first element to have the decorated function's output structure, so `grad(jit({name}))` raises "
            f"`TypeError: Custom VJP fwd rule ... must produce a pair ... (equal to the output of the "
            f"custom_vjp-decorated function {name})` and {plain}; return the full output ({expected}) as the first "
            f"element, or decorate a function that returns only what you differentiate")
