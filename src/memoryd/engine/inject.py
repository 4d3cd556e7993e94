"""What a hook injects into an agent's prompt: an engine read, the same for every host.

Claude Code's UserPromptSubmit hook, the daemon that answers it and OpenClaw's auto-recall all ask
`Injector.prompt_context`; none of them ranks, filters or budgets. Which hits may be injected at all is
decided in one place, `relevant` (the calibrated decision of `memoryd.search.relevance`). Nothing here records
what a session was given: the caller records it once the answer reached it (`shared.injected`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..search.rank import fused
from ..search.relevance import inject
from ..search.tokenize import language
from ..shared.errors import AuthorizationRequired
from ..shared.injected import estimate_tokens
from ..shared.limits import LIMITS
from ..shared.models import ATOM_TYPES, Hit
from .core import Core
from .reads import Reader

__all__ = ["PROMPT_SKIP_TYPES", "Injected", "Injector", "PromptContext", "relevant"]

# Types the prompt recall leaves out: session records are bookkeeping, the brief shows the handoff.
PROMPT_SKIP_TYPES = frozenset({"session", "handoff"})
RECALL_DEPTH = 20  # hits the decision looks at
ANSWER_MARGIN = 0.5  # seconds kept for the recall and the answer's way back when the model is waited for

_HEADER = {
    "en": "[memoryd · {scope}] memories relevant to this prompt:",
    "zh": "[memoryd · {scope}] 与这条提示相关的记忆：",
    "zh-Hant": "[memoryd · {scope}] 與這條提示相關的記憶：",
}


class Injected(BaseModel):
    """One memory a prompt is given, and the line it is given as."""

    id: str
    type: str
    content: str
    score: float
    line: str = Field(description="`- (type, id) content` on one line: what the hook adds.")


class PromptContext(BaseModel):
    """What to add to a prompt: `header` and each item's `line` (within the token budget), or nothing."""

    header: str = ""
    items: list[Injected] = Field(default_factory=list)
    semantic: bool = Field(True, description="Whether the semantic signal was used (False: the model was not ready).")

    @property
    def text(self) -> str:
        return "\n".join([self.header, *(i.line for i in self.items)]) if self.items else ""


def relevant(hits: Sequence[Hit], *, floor: float = 0.0) -> list[Hit]:
    """THE decision of which recalled memories a prompt may be given, best first: the calibrated relevance
    decision (`memoryd.search.relevance.inject`: active memories that stand out among the hits, at most
    three), and on top of it a fused-score `floor` (`prompt_min_score`, 0 by default; scaled down when the
    semantic signal was missing). Every host's prompt hook and OpenClaw's auto-recall go through here."""
    return [h for h in inject(hits) if h.score >= floor]


class Injector:
    def __init__(self, core: Core, reader: Reader) -> None:
        self.core = core
        self.reader = reader

    def prompt_context(self, prompt: str, *, given: Sequence[str] = (), within: float | None = None,
                       limit: int | None = None) -> PromptContext:  # fmt: skip
        """The memories to add to `prompt`: relevant ones (`relevant`), not in `given` (what the session has
        already), best first while they fit in `prompt_context_tokens`, at most `limit`. Empty for an empty
        prompt, a budget of 0, or a sensitive scope without a grant (no notice on every prompt).

        `within` (seconds): when the answer is due. The embedding model is waited for at most
        `prompt_model_wait` and never past that (less `ANSWER_MARGIN`); without it the recall uses keyword
        and entity signals, and the floor is scaled to what those can reach.
        """
        settings = self.core.settings
        if not isinstance(prompt, str) or not prompt.strip() or settings.prompt_context_tokens <= 0:
            return PromptContext()
        prompt = prompt.strip()[: LIMITS["query"][0]]  # a pasted log is not a query; its start says what it is about
        semantic = self._model_ready(within)
        types = [t for t in ATOM_TYPES if t not in PROMPT_SKIP_TYPES]
        try:
            hits = self.reader.recall(prompt, max_results=RECALL_DEPTH, types=types, semantic=semantic).hits
        except AuthorizationRequired:
            return PromptContext()
        floor = settings.prompt_min_score * (1.0 if semantic else fused({"keyword": 1.0}))
        header = _HEADER[language(prompt)].format(scope=self.core.scope.name)
        budget = settings.prompt_context_tokens - estimate_tokens(header)
        seen, items = set(given), []
        for hit in relevant(hits, floor=floor):
            if hit.atom.id in seen:
                continue
            line = f"- ({hit.atom.type}, {hit.atom.id}) {' '.join(hit.atom.content.split())}"
            cost = estimate_tokens(line) + 1
            if cost > budget:
                continue  # a shorter, less relevant one may still fit
            items.append(Injected(id=hit.atom.id, type=hit.atom.type, content=hit.atom.content, score=hit.score,
                                  line=line))  # fmt: skip
            budget -= cost
            if limit is not None and len(items) >= limit:
                break
        return PromptContext(header=header, items=items, semantic=semantic)

    def _model_ready(self, within: float | None) -> bool:
        """Whether the query can be embedded: the model has loaded, or loads within the wait allowed."""
        settings = self.core.settings
        if settings.prompt_model_wait <= 0:
            return False  # MEMORYD_PROMPT_MODEL_WAIT=0: keyword and entity signals only
        waiting = getattr(self.core.embedder, "wait", None)
        if waiting is None:
            return True  # a model that is always ready (loaded by the caller, or the hashing fake)
        wait = settings.prompt_model_wait if within is None else min(settings.prompt_model_wait, within - ANSWER_MARGIN)
        return bool(waiting(max(0.0, wait)))
