"""Numbered schema migrations, applied in order when a database is opened."""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('snapshot_version', '0');

CREATE TABLE atoms (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    norm_hash TEXT,
    type TEXT NOT NULL,
    source TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    scope_root TEXT NOT NULL,
    scope_hash TEXT NOT NULL,
    epistemic TEXT NOT NULL,
    polarity TEXT NOT NULL,
    status TEXT NOT NULL,
    prior_status TEXT,
    title TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    triggers TEXT NOT NULL DEFAULT '[]',
    supersedes TEXT,
    superseded_by TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    embedding BLOB
);
CREATE INDEX atoms_scope_status ON atoms (scope_hash, status, created_at);
CREATE INDEX atoms_dedup ON atoms (scope_hash, norm_hash);

CREATE TABLE entities (id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL);

CREATE TABLE edges (
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (src, dst, kind)
);
CREATE INDEX edges_dst ON edges (dst, kind);

CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    atom_id TEXT,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    reason TEXT,
    at TEXT NOT NULL,
    content_hash TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX events_atom ON events (atom_id, seq);

-- Content lives apart from the chain so tombstoning can destroy it; the chain keeps hashes.
CREATE TABLE event_payloads (
    event_id TEXT PRIMARY KEY REFERENCES events (id),
    content TEXT
);

CREATE VIRTUAL TABLE atom_fts USING fts5 (terms, tokenize = "unicode61 tokenchars '_.-+#/'");
CREATE VIRTUAL TABLE atom_fts_vocab USING fts5vocab (atom_fts, 'row');

-- Events are append-only: the database itself refuses to rewrite or drop them.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
"""

_V2 = """
ALTER TABLE atoms ADD COLUMN last_accessed_at TEXT;
ALTER TABLE atoms ADD COLUMN vault_path TEXT;
ALTER TABLE atoms ADD COLUMN vault_digest TEXT;

CREATE TABLE sessions (
    id TEXT PRIMARY KEY REFERENCES atoms (id),
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    summary TEXT
);

CREATE TABLE promotions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    atom_id TEXT NOT NULL UNIQUE,
    scope_hash TEXT NOT NULL,
    origin TEXT NOT NULL,
    durability REAL NOT NULL,
    utility REAL NOT NULL,
    relevance REAL NOT NULL,
    accuracy REAL NOT NULL,
    average REAL NOT NULL,
    reasoning TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT
);
CREATE INDEX promotions_status ON promotions (status, scope_hash, average);

CREATE TABLE sensitive_scopes (scope_hash TEXT PRIMARY KEY, name TEXT NOT NULL, marked_at TEXT NOT NULL);
CREATE TABLE grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_hash TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE TABLE access_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_hash TEXT NOT NULL,
    reason TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
"""

# vec_seq orders every change to an atom's vector (new, re-embedded, re-scoped, destroyed), so
# each process's in-memory index catches up with writes made by any other process.
_V3 = """
ALTER TABLE atoms ADD COLUMN vec_seq INTEGER;
UPDATE atoms SET vec_seq = seq WHERE embedding IS NOT NULL;
CREATE INDEX atoms_vec_seq ON atoms (vec_seq);
"""

# Vault files are published after their transaction commits: each transaction records, with its
# changes, which atoms' files it must write or remove (and a token naming the transaction); the row
# is deleted once the file is published. A row left behind by a crash is finished at start-up from
# the database, never mistaken for a person's edit or deletion.
_V4 = """
CREATE TABLE vault_outbox (
    atom_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    remove_path TEXT,
    at TEXT NOT NULL
);
"""

# The console (issue 14): filtered listing newest first. In SQLite an index on one column also
# orders by rowid (= seq) within each value, so these serve `WHERE status = ? ORDER BY seq DESC`.
# `recalls` records when each recall ran and what it returned (hit ids, never the query: a query can
# hold a secret redaction misses, or the words of a memory later tombstoned) for the Sessions page;
# a read hint like last_accessed_at, not an audit event.
_V5 = """
CREATE INDEX atoms_status ON atoms (status);
CREATE INDEX atoms_type ON atoms (type);
CREATE INDEX atoms_source ON atoms (source);
CREATE INDEX atoms_scope ON atoms (scope_hash);
CREATE INDEX atoms_created ON atoms (created_at);
-- Covers the decay filter and counts (last use = max(updated_at, last_accessed_at) per type):
-- an index-only scan instead of reading rows that carry content and a 2 KB vector.
CREATE INDEX atoms_decay ON atoms (status, type, updated_at, last_accessed_at, epistemic);
CREATE TABLE recalls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    scope_hash TEXT NOT NULL,
    hits TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX recalls_scope_at ON recalls (scope_hash, at);
"""

# Code anchors (issue 13): the files and symbols a memory names, fingerprinted at its commit. Paths and
# symbols come from memory text, so tombstoning deletes an atom's rows.
_V6 = """
CREATE TABLE anchors (
    atom_id TEXT NOT NULL,
    path TEXT NOT NULL,
    symbol TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    lang TEXT,
    commit_sha TEXT,
    blob TEXT,
    fingerprint TEXT,
    line INTEGER,
    origin TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (atom_id, path, symbol)
);
CREATE INDEX anchors_path ON anchors (path, atom_id);
CREATE INDEX anchors_symbol ON anchors (symbol, atom_id);
"""

# (version, name, SQL script). Never edit a released entry: append a new one.
MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial schema: atoms, events, payloads, entities, edges, keyword index", _V1),
    (2, "vault paths, access times, sessions, promotions, sensitive scopes", _V2),
    (3, "vector change sequence", _V3),
    (4, "vault outbox: files to publish after commit", _V4),
    (5, "console: listing indexes, recall log", _V5),
    (6, "code anchors", _V6),
]
