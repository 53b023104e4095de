"""LLM-free machinery: grail steering, knowledge-base search, memory and page tools."""
