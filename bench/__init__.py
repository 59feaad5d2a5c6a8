"""Benchmarks: each module runs with `python -m bench.<name>` and prints figures against a baseline
measured in the same run. `python -m bench` lists them. Figures measured are recorded in docs/benchmarks.md."""
