"""Code anchors: memories tied to the files and symbols they name, and how far the code has moved since.

Standard library only (the Claude Code file hook imports it without the engine, numpy or pydantic):

- `git`: the repository of a working directory: its HEAD, tracked paths, blob ids, renames, a word
  search, all cached against a cheap stamp of HEAD and the index;
- `symbols`: the definitions of a file (functions, classes, methods) with a fingerprint each:
  Python with `ast`, other languages with tree-sitter when the `memoryd[code]` extra is installed;
  `forms`: what a definition says, as hashes (fingerprint, without annotations or docstrings, its
  signature…), each computed once per file version and kept with its table;
- `mentions` and `resolve`: which files and symbols a memory names and is about (entities, names as
  people write them, explicit anchors);
- `drift`: what changed since an anchor was taken (file deleted or renamed, symbol changed, moved,
  renamed or gone; `moves` searches the files changed since), its verdicts kept on disk (`verdicts`);
- `filectx`: the memories anchored to a file, as the context a file hook adds, within a token budget.
"""

from __future__ import annotations

from .model import Anchor, Change

__all__ = ["Anchor", "Change"]
