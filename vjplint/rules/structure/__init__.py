"""The returned structure against the structure JAX expects: pairs, tuples and their lengths,
containers, residuals, ranks, dtypes (float0, complex, fixed dtypes), nnx State for an array
(VJP304, VJP306, VJP307, VJP313, VJP318-VJP323, VJP328-VJP331, VJP333, VJP338, VJP340).

May import: rules.base, rules.helpers and every layer below the rules (facts, plans, model, ...);
never another rule family (what two families share goes to vjplint/facts/). The family's
private analysis (`_*.py`, what only its rules read) is imported by its own rules alone.
"""
