"""Register memoryd with Claude Code and Codex, and take it out again.

Claude Code (formats from the Claude Code docs: MCP scopes and the hooks reference):

- MCP server: `<project>/.mcp.json` (project scope, shared) or `~/.claude.json` (user scope), both
  `{"mcpServers": {"<name>": {"type": "stdio", "command": "...", "args": [...]}}}`. A project's
  `.mcp.json` servers wait for the user's approval (`enabledMcpjsonServers` /
  `enableAllProjectMcpServers` in the user's settings); install says so and never approves silently.
- Hooks: `<project>/.claude/settings.json` or `~/.claude/settings.json`,
  `{"hooks": {"<Event>": [{"matcher": "<regex>", "hooks": [{"type": "command", "command": "...",
  "timeout": <seconds>}]}]}}`. memoryd adds SessionStart, PreToolUse (matcher = its own tools,
  `mcp__memoryd__.*` or `mcp__hmg__.*`, and a second one, shared by both profiles, for the file
  tools `Read|Edit|Write|MultiEdit|NotebookEdit`), SessionEnd and PreCompact, each running
  `<abs path>/memoryd hook <event>`.

Codex: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), table
`[mcp_servers.<name>]` with `command` and `args`, edited with tomlkit so comments, order and the
other tables stay as they were.

Team server (`--remote URL --token-env VAR`): the MCP server registered is `memoryd connect URL
--token-env VAR` (stdio, started in the agent's working directory, so the scope still follows the
repository the agent works in); Codex's table adds `env_vars = ["VAR"]`, the list of variables it
passes on to the server. Only the variable's NAME is written: the token stays in the person's
environment. No hooks: they read and write a local store, which a team server's person does not
have (the report says so).

Every edit merges (other servers and hooks are never touched), is idempotent (a second install
changes nothing), keeps `<file>.memoryd-backup` of the file as it was before memoryd's first
change, and is reversed by uninstall: when nothing else changed in between the original bytes
come back exactly; otherwise only memoryd's entries are taken out (and whatever they replaced is
put back). A file that does not parse is reported by name and left untouched.
"""

from __future__ import annotations

from .claude import install_claude, uninstall_claude
from .codex import install_codex, uninstall_codex
from .common import (
    ABSENT_MARK,
    BACKUP_SUFFIX,
    HOOK_EVENTS,
    Change,
    InstallError,
    InstallReport,
    backup_dir,
    default_executable,
)
from .desktop import (
    claude_desktop_config,
    install_claude_desktop,
    install_cursor,
    uninstall_claude_desktop,
    uninstall_cursor,
)
from .openclaw import install_openclaw, uninstall_openclaw

__all__ = [
    "ABSENT_MARK",
    "BACKUP_SUFFIX",
    "HOOK_EVENTS",
    "Change",
    "InstallError",
    "InstallReport",
    "default_executable",
    "backup_dir",
    "claude_desktop_config",
    "install_claude",
    "install_claude_desktop",
    "install_codex",
    "install_cursor",
    "install_openclaw",
    "uninstall_claude",
    "uninstall_claude_desktop",
    "uninstall_codex",
    "uninstall_cursor",
    "uninstall_openclaw",
]
