"""Engine: the single service layer. Every surface (MCP, CLI, hooks) calls these methods.

The class is assembled from themed parts, each in its own module: the write path, recall and
lifecycle (`core`), memory operations of the memoryd profile (`memories`), sessions,
promotion review, judgments, administration and sensitive scopes, the markdown vault,
observations from agent transcripts, bulk import of JSON lines and other tools' formats
(`importer`, `formats`), the prompts and resources the MCP surface serves (`library`), code anchors
(`anchoring`), and what the web console reads (`console`).
"""

from __future__ import annotations

from .admin import AdminOps
from .anchoring import AnchorOps
from .console import ConsoleOps
from .core import PLACEHOLDERS, EngineCore, visible_content
from .importer import ImportOps
from .library import LibraryOps
from .memories import MemoryOps
from .observations import ObservationOps
from .review import ReviewOps
from .sessions import SessionOps
from .vault_sync import VaultOps

__all__ = ["Engine", "PLACEHOLDERS", "visible_content"]


class Engine(
    ConsoleOps, ImportOps, LibraryOps, ObservationOps, VaultOps, AdminOps, ReviewOps, SessionOps, MemoryOps,
    AnchorOps, EngineCore,
):
    """memoryd's service layer over one store; see the module docstring for its parts."""
