"""Measurement: dataset loaders, metrics, the batch runner and reports."""
