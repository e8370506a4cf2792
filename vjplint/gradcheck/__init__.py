"""`vjplint check-grads`: prove the user's own custom_vjp/custom_jvp rules on real JAX.

`api.check_files` plans every recognised derivative from the source alone (the input
descriptions of vjplint.verify.synth), copies each module's package to a temporary directory,
and runs `child.py` there in a separate Python per module (vjplint.verify.api.run_harness: a
time limit, the process group killed at it). The child's parts (checker.py, inputs.py, modes.py,
numerics.py, callers.py, reference.py) are loaded by their paths there, never imported here.
`report.py` turns the outcomes into diagnostics (VJP501-VJP504, VJP509). Importing this package imports neither JAX nor the user's code.

May import: verify, batch, output, fixes and everything below them.
"""
