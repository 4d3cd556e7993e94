"""The engine's public names, pinned (issue 22): the SDK's contract (`from memoryd import Engine`) and what
every surface calls. A name added, renamed or removed is a decision: change this list with it and say
so in the commit."""

from __future__ import annotations

from memoryd.engine import Engine

PUBLIC = {
    "access_requests", "acting_as", "add_members", "agent_brief", "anchors", "api", "authenticate", "authority",
    "backfill_vectors", "brief_resource", "browse", "capture_passive", "close", "code_changes", "code_moved_since_last_session",
    "code_status", "compare", "confirm_anchors", "console_scopes", "context", "correct", "create_team",
    "create_token", "current_project", "decay_of", "decide_promotions", "delete", "dismiss_link", "doctor", "embedder",
    "english", "enforce_sensitive", "entity_graph", "entity_page", "export", "export_file", "export_markdown", "finish_crashed_writes",
    "for_request", "for_scope", "get", "govern", "grant", "handoff", "health_overview", "history", "import_file",
    "import_jsonl", "import_state", "judge", "list_tokens", "llm", "mark_sensitive", "memories_for_path",
    "memorize", "memory_detail", "merge_projects", "observation_state", "observe_transcript", "open", "patch",
    "path_of", "promote", "prompt", "prompt_context", "prompts", "reachable_scopes", "recall", "recover_vault", "reject",
    "render_prompt", "request_access", "request_sensitive_read", "resolve_scope", "resolve_scope_arg", "resource",
    "resources", "restore", "review_links", "review_pending", "revoke_token", "save_prompt", "scope", "scope_info",
    "scope_input_warning", "scope_of", "search", "session_context", "session_detail", "session_end",
    "session_start", "session_summary", "sessions_page", "settings", "share_scope", "stale", "stale_checked",
    "stats", "stats_detail", "store", "suggest_topic_key", "supersede", "teams_overview", "term_embedder", "timeline",
    "timeline_window", "update", "vault_check", "vault_root", "vault_sync", "verify_chain", "warm",
}  # fmt: skip


def test_the_engine_public_names_are_pinned() -> None:
    names = {n for n in dir(Engine) if not n.startswith("_")}
    assert names - PUBLIC == set(), "new public engine names: add them to PUBLIC on purpose"
    assert PUBLIC - names == set(), "public engine names gone: remove them from PUBLIC on purpose"
