"""The LLM-calling roles (planner, retriever, reasoner, decomposer, reranker, generator...)."""
