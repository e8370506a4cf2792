"""Traced values treated as concrete or let out of the rule: closures over traced values, side
effects in rules, NumPy on traced values, Python branches on tangents (VJP201, VJP202, VJP332, VJP335).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
