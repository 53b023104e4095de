"""`hopgraph optimize`: the prompt search (`search.py`) and its proposer role (`proposer.py`)."""
