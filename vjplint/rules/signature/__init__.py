"""The rules' signatures against the call JAX makes: fwd, bwd and jvp arity, keyword-only
primal parameters, nnx's pair cotangent, a pullback's arity (VJP303, VJP305, VJP310, VJP312,
VJP317, VJP326).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
