"""What persists: the knowledge base (Chroma + docstore) and the PolarMem polarized graph."""
