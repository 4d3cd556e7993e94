"""MCP tool handlers, one module per profile: model in → one engine call → model out."""
