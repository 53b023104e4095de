"""hopgraph: multimodal multi-hop question answering on LangGraph."""

__version__ = "0.1.0"
