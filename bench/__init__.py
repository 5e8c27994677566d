"""Benchmark package for SGLang servers with speculative decoding (DFlash, DDTree).

Importable API: `bench.metrics` (metric definitions), `bench.speedup.compute` (speed-up per cell),
`bench.runner.run_benchmark` (one benchmark run), `bench.records` (record files).
"""

__version__ = "0.1.0"
