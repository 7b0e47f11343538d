"""Benchmarks of Codex's own overhead (issue 8): `python -m bench.run [--smoke]`."""
