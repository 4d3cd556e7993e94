"""Which query terms a keyword search matches on: every one on small stores, the most selective on big ones.

Both stores apply it (FTS5 postings, the GIN index); recall scores every candidate on all the
query's terms afterwards (`search.rank.features`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "KEYWORD_BIG_SCOPE_BUDGET",
    "KEYWORD_BIG_SCOPE_DOCS",
    "KEYWORD_BIG_TERMS",
    "KEYWORD_POSTINGS_BUDGET",
    "selective_terms",
]

# Keyword candidates: while the query terms' postings (documents holding each term, summed) stay
# within the budget, every term takes part; above it, only the most selective ones do (at most
# KEYWORD_BIG_TERMS, always at least the rarest), so a query costs the same on any store size.
KEYWORD_POSTINGS_BUDGET = 6000
KEYWORD_BIG_TERMS = 6
# A big scope (more documents than KEYWORD_BIG_SCOPE_DOCS in the scopes a recall reads: a team's shared
# repository on a team server) has a tighter budget: each matching row is read to be scored, and 6 000 of
# them cost PostgreSQL up to 98 ms at 100k (issue 27); in a big scope the rarest terms alone still match
# more rows than the candidate pool holds.
KEYWORD_BIG_SCOPE_DOCS = 20_000
KEYWORD_BIG_SCOPE_BUDGET = 1500


def selective_terms(terms: Sequence[str], df: dict[str, int], docs: int = 0) -> tuple[list[str], bool]:
    """(terms to match on, whether the budget cut them); terms no atom holds are dropped. `docs`: the
    documents of the scopes searched (the budget is tighter above KEYWORD_BIG_SCOPE_DOCS)."""
    budget = KEYWORD_BIG_SCOPE_BUDGET if docs > KEYWORD_BIG_SCOPE_DOCS else KEYWORD_POSTINGS_BUDGET
    present = [t for t in dict.fromkeys(terms) if df.get(t, 0) > 0]
    if sum(df[t] for t in present) <= budget:
        return present, False
    chosen: list[str] = []
    covered = 0
    for term in sorted(present, key=lambda t: df[t])[:KEYWORD_BIG_TERMS]:
        if chosen and covered + df[term] > budget:
            break
        chosen.append(term)
        covered += df[term]
    return chosen, True
