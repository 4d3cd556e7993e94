"""Retrieval components the engine composes: tokenizer, embedders, vector index, ranking."""
