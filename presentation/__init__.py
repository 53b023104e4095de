"""What a user reads: the trace model and its report, method views, plots, ``hopgraph view``
and the results pages."""
