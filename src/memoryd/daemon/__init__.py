"""The resident memoryd: one warm process per data home; every surface is a thin client of it.

- `client` (standard library only): finds the daemon of a data home, starts it on demand (one, under a
  lock), and talks HTTP/1.1 to it over its Unix socket with timeouts; `connect` is THE choice every surface
  makes between the daemon and its own process. Hooks and the stdio MCP forwarder import only this.
- `server`: the daemon (`memoryd daemon serve`): the engine, the models and the indexes, the local API
  (`api`, docs/LOCAL_API.md: engine reads and writes, what the hooks inject included) and both MCP tool
  profiles, each request acting in the scope its client sent.
- `operator`: `memoryd <command>`'s one way to the engine (the daemon's or its own); `console`: `memoryd ui`
  served by the daemon, both sides.
- `mcp_entry`: `memoryd-mcp`: over stdio, a forwarder to the daemon; in-process as before when the
  daemon cannot run (or for the HTTP transports).

Nothing here imports the engine at import time.
"""
