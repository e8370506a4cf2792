"""Linearity in the tangent or cotangent: nonlinear jvp tangents, bwd terms without the cotangent,
where-guards whose transpose gives NaN or drops a higher derivative (VJP601, VJP606, VJP607, VJP612).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
