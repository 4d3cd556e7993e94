"""What a wrong team-server secret may cost, and whom its failures hold back (issues 23 and 37).

A token's secret is checked with scrypt (~40 ms, 16 MiB): one check runs at a time (`Slot`), a waiter
gives up after `WAIT_S`. Failures are counted per key, `FREE` per `WINDOW_S`; past them a key is held back
for a time that doubles with each further failure (1 s up to `MAX_BACKOFF_S`). The keys are chosen so that
a valid token is never held back by someone else's failures:

- `pair`: one token id from one client address. Its presentations from that address are refused before
  hashing: guessing one person's secret stops, from the guesser's address only.
- `secret`: one secret, whatever id it comes with (a client repeating a wrong token, or one guess sprayed
  over many ids). A valid secret is failed only by someone who holds it.
- `address`: every failure from one client address (behind a company NAT, many people). It holds back only
  what cannot be a valid token: an id no live token has, refused without hashing. A live id from a held
  address is checked as always (a newcomer's valid token passes), and if its secret is wrong it is answered
  as an unknown id is there, 429; the unknown id's answer waits as long as recent checks took (`pace`), so
  neither the answer nor its timing tells a real id from a made-up one, and the wait costs no CPU.

A token the process verified before is never held back (`tenancy._known`). The hashing slot serves first a
check whose token id never failed (`Slot`): a newcomer's valid token does not queue behind guesses at ids that
failed already. Per process; bounded in memory.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections import deque
from dataclasses import dataclass

from ..shared.errors import TooManyAttempts

__all__ = ["Gate", "GateKeys", "Slot"]

_MESSAGE = "too many failed attempts with this token or from this address; retry in {wait} s"


@dataclass(frozen=True)
class GateKeys:
    """The backoff keys of one presented token (see the module docstring)."""

    pair: str
    secret: str
    address: str | None
    token: str  # the id from any address: never refuses, only orders the hashing queue (`Gate.fresh`)

    @classmethod
    def of(cls, token_id: str, secret: str, client: str | None) -> GateKeys:
        digest = hashlib.sha256(secret.encode()).hexdigest()[:32]  # the secret itself is never kept
        return cls(pair=f"id:{token_id}@{client or ''}", secret=f"secret:{digest}",
                   address=f"addr:{client}" if client else None, token=f"seen:{token_id}")  # fmt: skip


class Slot:
    """The hashing slot: one check at a time; a waiter marked `urgent` goes before the others."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._urgent = 0

    def acquire(self, timeout: float, *, urgent: bool = False) -> bool:
        """Wait up to `timeout` s for the slot; False when it stayed taken."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._urgent += urgent
            try:
                while self._busy or (not urgent and self._urgent):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                self._busy = True
                return True
            finally:
                self._urgent -= urgent

    def release(self) -> None:
        with self._cond:
            self._busy = False
            self._cond.notify_all()


class Gate:
    """The hashing bound and the failure counters of one process."""

    WAIT_S = 5.0
    FREE, WINDOW_S, FIRST_BACKOFF_S, MAX_BACKOFF_S, KEYS = 5, 60.0, 1.0, 60.0, 10_000
    SAMPLES = 64  # recent check durations `pace` draws from

    def __init__(self) -> None:
        self.hashing = Slot()
        self._lock = threading.Lock()
        self._failures: dict[str, tuple[int, float, float]] = {}  # key -> (failures, window start, held until)
        self._durations: deque[float] = deque(maxlen=self.SAMPLES)

    def check(self, keys: GateKeys, *, live: bool) -> int:
        """Before hashing: refuse a presentation whose pair or secret is held; from a held address, refuse an id
        no live token has (its pair and secret count the failure, as a checked one's would; answered after
        `pace`). Returns the held address's wait for a presentation checked anyway (a live id; or any, before a
        check's duration was measured): if its secret is wrong, `refuse` it with that wait. Raises
        TooManyAttempts."""
        now = time.monotonic()
        with self._lock:
            wait = max(self._wait(keys.pair, now), self._wait(keys.secret, now))
            address = self._wait(keys.address, now)
            pace = self._pace() if address and not live else None
            if not wait and pace is not None:
                self._count((keys.pair, keys.secret, keys.token), now)
        if wait:  # the longest hold that applies, whether or not the id is real
            self.refuse(max(wait, address))
        if pace is not None:
            self.refuse(address, pace)
        return address

    def failed(self, keys: GateKeys, *, address: bool = True) -> None:
        """A wrong secret: counted for its pair, its secret and, unless `address` is False (the address was held
        already: a made-up id refused there does not extend it either), its address."""
        with self._lock:
            self._count((keys.pair, keys.secret, keys.token, keys.address if address else None), time.monotonic())

    def fresh(self, keys: GateKeys) -> bool:
        """Whether this token id has no failure counted in the last `WINDOW_S` (from any address): its check goes
        first."""
        with self._lock:
            f = self._failures.get(keys.token)
        return f is None or time.monotonic() - f[1] > self.WINDOW_S

    def cleared(self, keys: GateKeys) -> None:
        """A valid token from this address: its own pair's failures are forgiven (not the address's)."""
        with self._lock:
            self._failures.pop(keys.pair, None)

    def timed(self, seconds: float) -> None:
        """Record how long one check took (waiting for a slot included): what `pace` draws from."""
        with self._lock:
            self._durations.append(seconds)

    @staticmethod
    def refuse(wait: int, pace: float = 0.0) -> None:
        """Raises TooManyAttempts: retry after `wait` s; the server answers after `pace` s."""
        raise TooManyAttempts(_MESSAGE.format(wait=wait), retry_after=wait, pace=pace)

    def _count(self, keys: tuple[str | None, ...], now: float) -> None:
        if len(self._failures) >= self.KEYS:  # forget what holds nothing back first, then the oldest
            order = sorted(self._failures, key=lambda k: (self._failures[k][2] > now, self._failures[k][1]))
            for k in order[: self.KEYS // 2]:
                del self._failures[k]
        for k in filter(None, keys):
            n, start, until = self._failures.get(k, (0, now, 0.0))
            if now - start > self.WINDOW_S and until <= now:
                n, start = 0, now
            n += 1
            if n > self.FREE:
                until = now + min(self.MAX_BACKOFF_S, self.FIRST_BACKOFF_S * 2.0 ** (n - self.FREE - 1))
            self._failures[k] = (n, start, until)

    def _wait(self, key: str | None, now: float) -> int:
        f = self._failures.get(key) if key else None
        return math.ceil(f[2] - now) if f and f[2] > now else 0

    def _pace(self) -> float | None:
        return random.choice(self._durations) if self._durations else None  # noqa: S311 - timing, not a secret
