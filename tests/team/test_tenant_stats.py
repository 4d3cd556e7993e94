"""Issue 23, first team-server point: no statistic crosses a tenant boundary, on both backends.

A tenant probing a guessed word (a codename, a customer's name) must learn nothing of other tenants'
private memories: its recall answers and scores are byte-identical before and after another tenant
writes memories holding the probed word, and `snapshot_version` in its stats does not count them.
The statistics over every scope do move: the probe is sensitive.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memoryd.engine import Engine, HashEmbedder
from memoryd.search.tokenize import tokens
from memoryd.shared.config import Settings

ALICE = [
    "Project Orion ships the billing export on Fridays",
    "The orion worker retries payment webhooks three times",
    "Use pnpm for the web client, never npm",
    "The api answers health checks at /healthz",
    "Billing export files land in the ledger bucket",
    "OrionBilling owns the invoice schema migrations",
]
BOB = [
    "Orion is the codename of the Acme takeover; do not tell anyone",
    "orion orion orion: the customer list for Orion lives in the red drive",
    "OrionBilling is being replaced by Zephyr next quarter",
    "Project Orion due diligence meets on Fridays",
    "zephyr rollout: billing export moves to the orion worker",
] * 4
PROBES = ["orion billing export", "Orion", "OrionBilling invoice schema", "zephyr takeover", "Fridays health checks"]


@pytest.fixture
def op(settings: Settings) -> Iterator[Engine]:
    with Engine.open(settings, embedder=HashEmbedder(), authority="operator", cwd=settings.home) as e:
        yield e


def header(repo: str) -> str:
    workspace, repository = repo.rsplit("/", 1)
    return json.dumps({"workspace": workspace, "repository": repository})


def answers(view: Engine) -> str:
    """Every probe's hits with their scores and signals, as bytes to compare."""
    out = []
    for probe in PROBES:
        hits = view.recall(probe, max_results=20, record=False).hits
        out.append([(h.atom.id, h.score, h.signals) for h in hits])
    return json.dumps(out, sort_keys=True)


def test_another_tenants_writes_move_no_score_and_no_version(op: Engine) -> None:
    alice = op.for_request(op.authenticate(op.create_token("alice").token), header("acme/api"))
    for text in ALICE:
        alice.memorize(text, type="fact")
    alice.memorize("Orion notes are kept in the person's global scope", type="preference")
    answers(alice)  # access times recorded once, so the reads below see the same decay state
    before, version = answers(alice), alice.stats().snapshot_version
    assert any(json.loads(before)), "alice's probes must find her memories"
    # bob, another tenant, fills his own scopes (the same repository name, and his global scope) with the
    # probed words, and alice's words and entities
    bob = op.for_request(op.authenticate(op.create_token("bob").token), header("acme/api"))
    bob_elsewhere = op.for_request(op.authenticate(op.create_token("bob").token), header("acme/secret"))
    everyone = [*alice._core.recall_scopes(), *bob._core.recall_scopes(), *bob_elsewhere._core.recall_scopes()]
    terms = [tokens(w, query=True)[0] for w in ("orion", "zephyr")]
    df_before = op.store.term_stats(terms, scope_hashes=everyone)
    for i, text in enumerate(BOB):
        (bob if i % 2 else bob_elsewhere).memorize(f"{text} (note {i})", type="fact")
    bob.memorize("Orion: I prefer to hear about it first", type="preference")

    # the statistics of all scopes moved (a ranking on them would leak the writes) ...
    df_after = op.store.term_stats(terms, scope_hashes=everyone)
    assert df_after[0] > df_before[0] and df_after[1][terms[0]] > df_before[1][terms[0]]
    assert df_after[1][terms[1]] > df_before[1][terms[1]] == 0
    assert op.store.snapshot_version() > version
    # ... alice's answers, scores and version did not
    assert answers(alice) == before
    assert alice.stats().snapshot_version == version
    # her own write moves her version, and bob sees none of it in his
    bob_version = bob.stats().snapshot_version
    alice.memorize("Orion exports are signed with the ledger key id", type="fact")
    assert alice.stats().snapshot_version > version
    assert bob.stats().snapshot_version == bob_version


def test_scoped_statistics_count_only_those_scopes(op: Engine) -> None:
    alice = op.for_request(op.authenticate(op.create_token("alice").token), header("acme/api"))
    bob = op.for_request(op.authenticate(op.create_token("bob").token), header("acme/api"))
    alice.memorize("orion billing export", type="fact")
    for i in range(3):
        bob.memorize(f"orion takeover memo {i}", type="fact")
    scopes = alice._core.recall_scopes()
    orion, takeover, billing = (tokens(w, query=True)[0] for w in ("orion", "takeover", "billing"))  # indexed forms
    total, df = op.store.term_stats([orion, takeover, billing], scope_hashes=scopes)
    assert (total, df) == (1, {orion: 1, takeover: 0, billing: 1})
    total, df = op.store.term_stats([orion, takeover], scope_hashes=bob._core.recall_scopes())
    assert (total, df) == (3, {orion: 3, takeover: 3})
    assert op.store.term_stats([orion], scope_hashes=[])[1] == {orion: 0}  # no scope: nothing counts
    assert op.store.snapshot_version([]) == 0
    assert op.store.snapshot_version(scopes) == 1  # alice's one memorize: one event on her atom
