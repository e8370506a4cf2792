"""Transformations around a custom derivative that cannot pass it: forward mode on a custom_vjp,
custom_vjp over custom_jvp, custom_vmap around custom_vjp, staged checkify, a callback vmap cannot
batch, second-order reverse mode through remat-optimised rules (VJP315, VJP604, VJP605, VJP608,
VJP336, VJP339).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
