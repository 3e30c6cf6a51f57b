"""Benchmarks for taskq and its peers. Run by hand (see bench/README.md); never part of the test suite."""
