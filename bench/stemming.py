"""Stemming and tokenizing speed: the Snowball English stemmer as memoryd uses it.

Text: the English words of LoCoMo's dialog turns (`/work/shared/data/locomo10_dev.json`, the
first conversations, as bench/locomo.py stores them) plus bench/data/bilingual.jsonl.

Rows:
- `snowball pure-python, uncached`: `snowballstemmer.english_stemmer.EnglishStemmer().stemWord`, the algorithm
  snowballstemmer falls back to without PyStemmer;
- `snowball pure-python, lru_cache + lock`: the same behind memoryd's former memo (a warm cache:
  every word seen once before the timed pass, as in a long-running server);
- `snowballstemmer.stemmer("english")`: what the package hands out here (PyStemmer's C stemmer
  when PyStemmer is installed, which is what memoryd now calls, uncached, no lock);
- `memoryd tokens()`: the whole tokenizer over every text (index side), as installed here, and
  the same with its former stem function (pure-Python Snowball behind an lru_cache and a lock,
  the cache cold at the start of each pass). Best of `--repeat` passes.

    .venv/bin/python bench/stemming.py [--texts 20000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from functools import lru_cache
from pathlib import Path

from _common import machine

HERE = Path(__file__).resolve().parent
LOCOMO = Path("/work/shared/data/locomo10_dev.json")


def _texts(limit: int) -> list[str]:
    out: list[str] = []
    if LOCOMO.exists():
        for conv in json.loads(LOCOMO.read_text(encoding="utf-8")):
            c = conv["conversation"]
            for key in sorted(k for k in c if re.fullmatch(r"session_\d+", k)):
                out.extend(f"{t['speaker']}: {t['text']}" for t in c[key])
    for line in (HERE / "data" / "bilingual.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if "text" in obj:
            out.append(obj["text"])
    return out[:limit]


def _time(fn, words: list[str]) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    for w in words:
        fn(w)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import snowballstemmer

    from memoryd.search.tokenize import tokens

    texts = _texts(args.texts)
    words = [w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t)]
    from snowballstemmer.english_stemmer import EnglishStemmer

    pure = EnglishStemmer()
    lock = threading.Lock()

    @lru_cache(maxsize=65536)
    def cached(word: str) -> str:
        with lock:
            return str(pure.stemWord(word))

    for w in words:  # warm the memo
        cached(w)
    packaged = snowballstemmer.stemmer("english")
    rows = [
        ("snowball pure-python, uncached", _time(pure.stemWord, words)),
        ("snowball pure-python, lru_cache + lock (warm)", _time(cached, words)),
        (
            f"snowballstemmer.stemmer('english') = {type(packaged).__module__}.{type(packaged).__name__}",
            _time(packaged.stemWord, words),
        ),
    ]
    import memoryd.search.tokenize as tok

    def pass_(stem) -> float:  # type: ignore[no-untyped-def]
        saved, tok._stem = tok._stem, stem
        try:
            start = time.perf_counter()
            for t in texts:
                tokens(t)
            return time.perf_counter() - start
        finally:
            tok._stem = saved

    n_terms = sum(len(tokens(t)) for t in texts)
    tok_s = min(pass_(tok._stem) for _ in range(args.repeat))
    former: list[float] = []
    for _ in range(args.repeat):
        cached.cache_clear()
        former.append(pass_(cached))
    old_s = min(former)
    print(f"{len(texts)} texts, {len(words)} English words ({len(set(words))} distinct), {n_terms} index terms")
    print(f"{'stemmer':<70} {'µs/word':>8} {'words/s':>12}")
    for name, secs in rows:
        print(f"{name:<70} {secs / len(words) * 1e6:>8.2f} {len(words) / secs:>12,.0f}")
    for name, secs in (
        ("memoryd tokens() over every text", tok_s),
        ("  the same with the former stem (pure-python + lru_cache + lock)", old_s),
    ):
        print(f"{name:<70} {secs / len(texts) * 1e6:>8.1f} µs/text  {len(texts) / secs:,.0f} texts/s")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine(),
                    "texts": len(texts),
                    "words": len(words),
                    "stemmers": [{"name": n, "seconds": s, "us_per_word": s / len(words) * 1e6} for n, s in rows],
                    "tokens_seconds": tok_s,
                    "tokens_us_per_text": tok_s / len(texts) * 1e6,
                    "former_tokens_seconds": old_s,
                    "former_tokens_us_per_text": old_s / len(texts) * 1e6,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
