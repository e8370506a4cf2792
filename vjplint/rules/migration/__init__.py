"""Code written for older JAX: the direct-linearize flag, JVPTracer sniffing, the removed
custom_transforms API (VJP401-VJP403).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
