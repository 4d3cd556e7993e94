"""The resident memoryd: one warm process per data home; every surface is a thin client of it.

- `client` (standard library only): finds the daemon of a data home, starts it on demand (one, under a
  lock), and talks HTTP/1.1 to it over its Unix socket with timeouts. Hooks and the stdio MCP forwarder
  import only this.
- `server`: the daemon (`memoryd daemon serve`): the engine, the models and the indexes, the local API
  (docs/LOCAL_API.md) and both MCP tool profiles, each request acting in the scope its client sent.
- `mcp_entry`: `memoryd-mcp`: over stdio, a forwarder to the daemon; in-process as before when the
  daemon cannot run (or for the HTTP transports).

Nothing here imports the engine at import time.
"""
