"""Measurement as the benchmarks define it: metrics, a run folder's scores (``hopgraph eval``
and ``compare``), paired statistics, GRAIL's offline evaluation."""
