"""The cold-start floor: a minimal MCP server on the same SDK (MCPServer, two trivial tools, stdio)."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer(name="floor")


@mcp.tool(description="Echo a text back.")
def echo(text: str) -> str:
    return text


@mcp.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    mcp.run("stdio")
