"""Rules checked against references (check-grads): cotangent, tangent, primal and transform
mismatches, derivatives never checked (VJP501-VJP504, VJP509).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
