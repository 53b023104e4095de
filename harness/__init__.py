"""The run machinery: the runner, run folders and their manifest, shared runs, budgets and
prices, OpenTelemetry export, code fingerprints."""
