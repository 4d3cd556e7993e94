"""Real MCP clients from npm (clients/) against real memoryd-mcp processes."""
