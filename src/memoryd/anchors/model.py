"""Plain records shared by the anchor modules, the stores and the engine.

Named tuples, not dataclasses or pydantic: the file hook imports them, and `dataclasses` (with
`inspect`) alone costs more start-up than the rest of its imports.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CHANGE_KINDS", "MINOR_ASPECTS", "Anchor", "Change"]

# What can happen to an anchor; `file_changed` only for a file whose memory anchors no symbol in it.
CHANGE_KINDS = (
    "file_deleted",
    "file_renamed",
    "file_changed",
    "symbol_changed",
    "symbol_removed",
    "symbol_moved",
    "symbol_renamed",
)
# What a `symbol_changed` was (`Change.aspect`); the first two do not make a memory stale.
MINOR_ASPECTS = ("annotation_only", "docstring_only")  # fmt: skip


class Anchor(NamedTuple):
    """One file or symbol a memory is tied to, as it was when the memory was written or confirmed.

    `path` is relative to the repository root with `/` separators; `symbol` is the qualified name
    (`Table.insert_all`) or "" for a file anchor; `blob` the git blob id of the file then; `fingerprint`
    the hash of the symbol's definition (None for a file); `commit` the HEAD it was taken at (None in
    a repository without commits).
    """

    path: str
    symbol: str = ""
    kind: str = "file"  # "file" | "symbol"
    lang: str | None = None
    commit: str | None = None
    blob: str | None = None
    fingerprint: str | None = None
    line: int | None = None
    origin: str = "auto"  # "auto" (named in the text) | "explicit" (passed as anchors)

    @property
    def ref(self) -> str:
        """How people and the `anchors` argument write it: `path` or `path::symbol`."""
        return f"{self.path}::{self.symbol}" if self.symbol else self.path


class Change(NamedTuple):
    """One way the code moved past an anchor."""

    kind: str  # one of CHANGE_KINDS
    path: str
    symbol: str | None = None
    since: str | None = None  # the anchor's commit, abbreviated
    to: str | None = None  # the new path (renamed, moved)
    new_symbol: str | None = None  # symbol_renamed: the name the same body now has
    # symbol_changed: "signature" | "body" | "members" | "annotation_only" | "docstring_only"; symbol_moved: how it
    # changed on the way (None: the same definition)
    aspect: str | None = None

    @property
    def minor(self) -> bool:
        """A change that leaves what the code does as it was (type hints, a docstring)."""
        return self.kind == "symbol_changed" and self.aspect in MINOR_ASPECTS

    @property
    def detail(self) -> str:
        since = f" since {self.since}" if self.since else ""
        what = f"{self.symbol} ({self.path})" if self.symbol else self.path
        if self.kind == "file_deleted":
            return f"{self.path} was deleted{since}"
        if self.kind == "file_renamed":
            return f"{self.path} was renamed to {self.to}{since}"
        if self.kind == "file_changed":
            return f"{self.path} changed{since}"
        if self.kind == "symbol_changed":
            how = {
                "annotation_only": " (type annotations only)",
                "docstring_only": " (docstring only)",
                "signature": " (its signature)",
                "members": " (its members' signatures)",
            }.get(self.aspect or "", "")
            return f"the definition of {what} changed{how}{since}"
        if self.kind == "symbol_renamed":
            where = f" in {self.to}" if self.to and self.to != self.path else ""
            return f"{what} was renamed to {self.new_symbol}{where} (same body){since}"
        if self.kind == "symbol_removed":
            return f"{what} is gone{since}"
        edited = {"signature": " and its signature changed", "body": " and changed",
                  "annotation_only": " and its type annotations changed",
                  "docstring_only": " and its docstring changed"}.get(self.aspect or "", "")  # fmt: skip
        return f"{self.symbol} moved from {self.path} to {self.to}{edited}{since}"

    def key(self) -> tuple[str, str, str, str]:
        return (
            self.kind,
            self.path,
            self.symbol or "",
            (self.to or "") + (f"::{self.new_symbol}" if self.new_symbol else ""),
        )
