"""A writer to be killed: memorize / update / replace / tombstone / delete in a loop, logging to a side file.

    python _crash_writer.py HOME REPO SIDE_FILE SEED [DB]

Before each operation it appends `attempt <op> <target> <token>` to SIDE_FILE, after it
`ack <op> <target> <new id> <token>`, each line fsynced, so whatever the kill interrupts the test
knows what was acknowledged and what was only attempted.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path


def main() -> None:
    home, repo, side, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    db = sys.argv[5] if len(sys.argv) > 5 else None
    from memoryd.engine import Engine
    from memoryd.search.embed import HashEmbedder
    from memoryd.shared.config import Settings

    rng = random.Random(seed)
    fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)

    with Engine.open(Settings(home=Path(home), db=db), cwd=repo, embedder=HashEmbedder()) as e:
        live = [a.id for a in e.store.list_atoms(scope_hashes=[e.scope.scope_hash], statuses=["active"], limit=-1)]
        log("ready")
        n = 0
        while True:
            n += 1
            token = f"t{seed}x{n}"
            op = rng.choice(["memorize"] * 4 + ["update", "replace", "tombstone", "delete"] if live else ["memorize"])
            target = rng.choice(live) if op != "memorize" else "-"
            log(f"attempt {op} {target} {token}")
            text = f"Crash test memory {token}: the deploy pipeline step {n} runs after the integration suite"
            if op == "memorize":
                r = e.memorize(text, source="user", gate="trusted")
                assert r.effect == "applied" and r.atom_id, r
                live.append(r.atom_id)
                log(f"ack {op} - {r.atom_id} {token}")
            elif op == "update":
                e.update(target, content=text)
                log(f"ack {op} {target} - {token}")
            elif op == "replace":
                c = e.correct(target, "replace", "crash test", new_content=text)
                assert c.effect == "applied" and c.new_atom_id, c
                live[live.index(target)] = c.new_atom_id
                log(f"ack {op} {target} {c.new_atom_id} {token}")
            elif op == "tombstone":
                g = e.govern(target, "tombstone", "crash test")
                assert g.effect == "applied", g
                live.remove(target)
                log(f"ack {op} {target} - {token}")
            else:
                e.delete(target)
                live.remove(target)
                log(f"ack {op} {target} - {token}")


if __name__ == "__main__":
    main()
