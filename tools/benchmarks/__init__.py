"""The benchmarks behind tools/bench.py, one module each."""
