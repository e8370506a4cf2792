"""Nondiff arguments: what the user put in (or left out of) nondiff_argnums and the slots it
moves: arrays, tracers, unhashable values, callables that capture, static values in a
differentiable slot, nondiff values traced by a jit beneath the creator (VJP101-VJP110).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
