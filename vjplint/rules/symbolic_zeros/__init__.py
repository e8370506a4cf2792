"""The `symbolic_zeros=True` protocol: with remat, raw primal records in fwd, SymbolicZero tangents
unguarded or unflagged, records read without the flag (VJP311, VJP324, VJP325, VJP327, VJP337).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
