"""Orders by position and name: bwd's parameters swapped, fwd and bwd swapped in `defvjp`, fwd's
parameters reordered, primals/tangents/cotangents permuted by name (VJP308, VJP309, VJP316, VJP334).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
