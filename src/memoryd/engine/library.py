"""What the MCP surface serves besides tools: saved prompts and memories as readable resources.

- Prompts are the templates `save_prompt` stored as `<data_root>/prompts/<name>.md`. Every
  `{word}` placeholder is an argument, all required; `render_prompt` fills them (plain
  substitution, never `str.format`, so braces in a value stay as they are).
- Resources are this repository's and the global scope's memories (nothing of another
  repository), `memory://<id>` each, rendered as their markdown file (frontmatter and body), and
  the agent brief `memory://brief`. A sensitive scope without a running grant is left out of the
  listing, and reading one of its memories (or the brief) raises AuthorizationRequired when the
  engine enforces sensitivity (the MCP surface does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..formats import vault
from ..shared.errors import InvalidInput, NotFound
from ..shared.limits import LIMITS, check_count, check_text
from ..shared.models import Atom
from ..storage.base import MemoryReads
from .admin import _PROMPT_NAME
from .inputs import read_in

if TYPE_CHECKING:
    from .core import Core
    from .reads import Reader

__all__ = ["BRIEF_URI", "MEMORY_URI", "Library", "SavedPrompt"]

MEMORY_URI = "memory://"
BRIEF_URI = "memory://brief"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")
MAX_RESOURCES = 500  # memories listed (newest first); any memory of the scope can still be read by its URI


@dataclass(frozen=True)
class SavedPrompt:
    name: str
    text: str
    arguments: list[str]
    path: Path

    @property
    def description(self) -> str:
        first = next((line.strip() for line in self.text.splitlines() if line.strip()), "")
        return first[:200]


class Library:
    """Saved prompts and memories as MCP resources."""

    def __init__(self, core: Core, reader: Reader, *, memories: MemoryReads) -> None:
        self.memories = memories
        self.core = core
        self.reader = reader

    # -- prompts ------------------------------------------------------------------------------

    def _prompts_dir(self) -> Path:
        return self.core.settings.home / "prompts"

    def prompts(self) -> list[SavedPrompt]:
        """Every saved prompt, by name."""
        folder = self._prompts_dir()
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob("*.md")):
            if _PROMPT_NAME.match(path.stem) and path.is_file():
                # save_prompt's content was redacted as it came in; a file edited by hand is redacted as it is read
                text = path.read_text(encoding="utf-8", errors="replace")[: LIMITS["prompt"][0]]
                text = read_in("prompt file", {"content": text})["content"]
                out.append(SavedPrompt(path.stem, text, list(dict.fromkeys(_PLACEHOLDER.findall(text))), path))
        return out

    def prompt(self, name: str) -> SavedPrompt:
        """One saved prompt. Raises NotFound, InvalidInput (a name over the limits table's `prompt_name`)."""
        check_text("prompt_name", name, field="name", required=True)
        for p in self.prompts():
            if p.name == name:
                return p
        raise NotFound(f"no saved prompt named {name!r}")

    def render_prompt(self, name: str, arguments: dict[str, str] | None = None) -> str:
        """The prompt's text with its `{placeholders}` filled. Raises NotFound, InvalidInput."""
        p = self.prompt(name)
        args = arguments or {}
        if not isinstance(args, dict):
            raise InvalidInput("prompt arguments must be an object of strings")
        check_count("prompt_args", list(args), field="arguments")
        for key, value in args.items():
            check_text("prompt_name", key, field="argument name")
            check_text("prompt_arg", value, field=f"argument {key}")
        missing = [a for a in p.arguments if not isinstance(args.get(a), str)]
        if missing:
            raise InvalidInput(f"prompt {name!r} needs the argument(s) {', '.join(missing)}")
        return _PLACEHOLDER.sub(lambda m: args.get(m.group(1), m.group(0)), p.text)

    # -- resources ----------------------------------------------------------------------------

    def _readable_scopes(self) -> list[str]:
        """This repository's and the global scope, less the sensitive ones without a grant (agents)."""
        scopes = self.core.recall_scopes(None)
        if not self.core.enforce_sensitive:
            return scopes
        return [h for h in scopes if not self.core.locked(h)]

    def resources(self, limit: int = MAX_RESOURCES) -> list[Atom]:
        """The active memories an agent here may read, newest first."""
        scopes = self._readable_scopes()
        if not scopes:
            return []
        return self.memories.list_atoms(scope_hashes=scopes, statuses=["active"], limit=limit)

    def resource(self, atom_id: str) -> str:
        """The markdown of memory `atom_id` (frontmatter and body), when it belongs to this repository
        or the global scope. Raises NotFound (also for another repository's id: the engine's scope
        boundary, `get`), AuthorizationRequired."""
        atom = self.core.get(atom_id)
        if atom.status != "active":
            raise NotFound(f"no active memory with id {atom.id!r}")
        return vault.render(atom)

    def export_markdown(self, folder: str | Path) -> dict[str, int]:
        """Every active memory (all scopes: this is the person's export) as a folder of linked markdown
        notes, `memoryd.formats.write_markdown`. Returns {"memories": n, "entities": m}.

        The folder is written whole or not at all: filled beside it, then renamed into place. It must be new,
        empty, or an earlier export (replaced whole). Raises InvalidInput otherwise, or when it cannot be written.
        """
        from ..formats import detect, write_markdown
        from ..shared.files import atomic_folder

        target = Path(folder)
        atoms = self.memories.list_atoms(statuses=["active"], limit=-1, newest_first=False)
        try:
            counts = atomic_folder(target, lambda staging: write_markdown(atoms, staging),
                                   replaceable=lambda f: detect(f) == "memoryd-markdown")  # fmt: skip
        except FileExistsError as exc:
            raise InvalidInput(f"{exc}: export into a new or empty folder (an earlier memoryd markdown export there "
                               "is replaced whole)") from None  # fmt: skip
        except OSError as exc:
            raise InvalidInput(f"cannot write the export to {target}: {exc.strerror or exc}") from None
        return counts

    def brief_resource(self) -> str:
        """The agent brief of this repository. Raises AuthorizationRequired for a sensitive scope."""
        self.core.guard_read(self.core.scope.scope_hash, self.core.scope.name)
        self.core.guard_read(self.core.global_scope.scope_hash, "global")
        return self.reader.agent_brief().text
