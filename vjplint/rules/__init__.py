"""One module per rule; see registry.py.

May import: plans, facts, model, syntax, settings and the top-level leaf modules; never
another rule module (shared wording: rules/helpers.py).
"""
