"""Question sets: the `Question` a run reads, the benchmark converters, the demo set."""
