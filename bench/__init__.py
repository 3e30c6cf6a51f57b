"""Benchmarks for taskq and its peers. Run by hand (see bench/README.md); the suite runs each at a tiny size only to
see that it still runs (tests/bench)."""
