"""Fix plans: what a rewrite would change, computed from the model and its facts; rules attach
them to diagnostics, fixes/ writes them.

May import: facts, model, syntax, settings and the top-level leaf modules.
"""
