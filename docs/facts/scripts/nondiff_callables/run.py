"""Run every case of this folder on JAX and print what it raises (saved in out.txt): each is a
callable passed in a nondiff position of a custom_vjp that closes over a traced value."""
import importlib, sys, glob, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
for p in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "[a-z]_*.py"))):
    name = os.path.basename(p)[:-3]
    m = importlib.import_module(name)
    try:
        m.trigger()
        print(name, "runs")
    except Exception as e:
        print(name, type(e).__name__, str(e).splitlines()[0][:110])
