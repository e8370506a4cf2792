"""The unit layer: in-process, no subprocess, no JAX import (enforced while each test runs)."""
