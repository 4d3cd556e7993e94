"""Code anchors: memories tied to the files and symbols they name, and how far the code has moved since.

Standard library only (the Claude Code file hook imports it without the engine, numpy or pydantic):

- `git`: the repository of a working directory: its HEAD, tracked paths, blob ids, renames, a word
  search, all cached against a cheap stamp of HEAD and the index;
- `symbols`: the definitions of a file (functions, classes, methods) with a fingerprint each:
  Python with `ast`, other languages with tree-sitter when the `memoryd[code]` extra is installed;
- `resolve`: which files and symbols a memory names (entities, backticked names, explicit anchors);
- `drift`: what changed since an anchor was taken (file deleted or renamed, symbol changed, moved or
  gone), cached per file state;
- `filectx`: the memories anchored to a file, as the context a file hook adds, within a token budget.
"""

from __future__ import annotations

from .model import Anchor, Change

__all__ = ["Anchor", "Change"]
