"""Rules that run and give silently wrong values: a used input's cotangent or tangent dropped,
the primal output computed from tangents, a rule that disagrees with the primal's slope, a
cotangent summed away (VJP602, VJP603, VJP609, VJP610, VJP611).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
