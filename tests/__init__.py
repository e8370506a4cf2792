"""vjplint's tests, one folder per layer (tests/conftest.py); shared helpers in tests/conftest.py."""
