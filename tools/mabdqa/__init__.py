"""MAB-DQA's LLM-free machinery: the page hypergraph, the page vectors for late interaction and
the Thompson-sampling bandit."""
