"""Registering the rules: a custom derivative never registered, `defvjp` used as a decorator,
`defjvps` with nondiff arguments, custom_vjp on an instance method, rules registered by a name
bound to a transformation of it, a creator applied twice (VJP203, VJP301, VJP302, VJP314, VJP341,
VJP351).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
