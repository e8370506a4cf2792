"""Verification of residual-plus-None rewrites on real JAX (SPEC section 8).

`api.verify_rewrites` is the entry point; `harness.py` is the script it runs in a separate
Python process (never imported here), with `verifier.py` (loaded by its path there) and
`process.py` (the child's plumbing; vjplint imports it only for `single_process_accelerator`);
`synth.py` describes inputs from the source alone.
Importing this package imports neither JAX nor the user's code.

May import: batch, output, fixes, project, lint and everything below them.
"""
