"""Examples of the checkpoint client with frameworks (run with python -m)."""
