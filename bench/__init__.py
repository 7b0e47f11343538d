"""Benchmarks of Codex's own overhead (bench/REPORT.md, bench/COMMENTARY.md):
`python -m bench.run [--smoke]`."""
