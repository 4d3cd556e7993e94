"""What the agent hosts run: the hooks (Claude Code, Codex) and the file hook, `memoryd install` /
`uninstall` per host, and `memoryd connect` (stdio MCP forwarded to a team server)."""
