"""A mergeable relative-error histogram: what a window keeps of its percentiles for the rollup
tiers (docs/storage.md, "Rollup tiers").

DDSketch's logarithmic mapping at relative accuracy ``ALPHA``: a value ``x > 0`` falls in
bucket ``ceil(log(x) / log(GAMMA))`` and reads back as ``2 GAMMA^i / (GAMMA + 1)``, within
``ALPHA`` of every value of its bucket. Negative values have buckets of their own by ``|x|``;
``|x| < MIN_MAGNITUDE`` counts as zero. Each sign keeps at most ``MAX_BUCKETS`` buckets: the
lowest (smallest ``|x|``) are collapsed into the lowest kept one, a function of the highest
bucket only, so merging is associative and commutative. The executors build the same bytes
from a window's KLL sketch (``io.apm.aggregator.LogHistogram``); both sides' tests hold one
encoding of the same values.

Bytes: ``VERSION``, the zero count, then the positive and the negative store, each as its
lowest index (zigzag varint), its number of buckets (varint) and one varint count a bucket.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

__all__ = [
    "ALPHA",
    "GAMMA",
    "MAX_BUCKETS",
    "MAX_BYTES",
    "MIN_MAGNITUDE",
    "VERSION",
    "LogHistogram",
]

ALPHA = 0.01
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)
# log of the representative's factor: 2 GAMMA^i / (GAMMA + 1) = exp(i log GAMMA - this).
_LOG_MID = math.log((GAMMA + 1) / 2)
MIN_MAGNITUDE = 1e-9
MAX_BUCKETS = 2048
VERSION = 1
_MAX_COUNT = (1 << 63) - 1
# Every index a finite double of at least MIN_MAGNITUDE maps to lies within this.
_MAX_INDEX = 36_000
# The longest valid encoding: version, zero count, two stores of MAX_BUCKETS 10-byte counts.
MAX_BYTES = 1 + 10 + 2 * (5 + 2 + 10 * MAX_BUCKETS)


def _index(magnitude: float) -> int:
    return math.ceil(math.log(magnitude) / _LOG_GAMMA)


def _collapsed(store: Mapping[int, int]) -> dict[int, int]:
    """``store`` with every bucket below ``top - MAX_BUCKETS + 1`` moved to that one."""
    if not store:
        return {}
    floor = max(store) - MAX_BUCKETS + 1
    out: dict[int, int] = {}
    for key, count in store.items():
        k = max(key, floor)
        out[k] = out.get(k, 0) + count
    return out


class LogHistogram:
    """Counts by bucket: ``zero``, ``positive`` and ``negative`` ({index: count}, each at
    most MAX_BUCKETS wide). Immutable by convention: ``add`` and ``merge`` return new ones."""

    __slots__ = ("negative", "positive", "zero")

    def __init__(
        self,
        zero: int = 0,
        positive: Mapping[int, int] | None = None,
        negative: Mapping[int, int] | None = None,
    ) -> None:
        self.zero = zero
        self.positive = _collapsed({k: c for k, c in (positive or {}).items() if c})
        self.negative = _collapsed({k: c for k, c in (negative or {}).items() if c})
        if self.count > _MAX_COUNT:
            raise ValueError(f"a histogram counts at most {_MAX_COUNT} values")

    @classmethod
    def of(cls, values: Iterable[float], weights: Iterable[int] | None = None) -> LogHistogram:
        """The histogram of ``values`` (finite numbers), each counted ``weights`` times (1)."""
        zero, pos, neg = 0, dict[int, int](), dict[int, int]()
        ws = iter(weights) if weights is not None else None
        for x in values:
            w = 1 if ws is None else next(ws)
            if not math.isfinite(x):
                raise ValueError(f"a histogram holds finite values only, got {x!r}")
            if isinstance(w, bool) or not isinstance(w, int) or w < 1:
                raise ValueError(f"a weight is a whole number >= 1, got {w!r}")
            if abs(x) < MIN_MAGNITUDE:
                zero += w
            else:
                store = pos if x > 0 else neg
                k = _index(abs(x))
                store[k] = store.get(k, 0) + w
        return cls(zero, pos, neg)

    @property
    def count(self) -> int:
        return self.zero + sum(self.positive.values()) + sum(self.negative.values())

    def merge(self, other: LogHistogram) -> LogHistogram:
        pos, neg = dict(self.positive), dict(self.negative)
        for mine, theirs in ((pos, other.positive), (neg, other.negative)):
            for k, c in theirs.items():
                mine[k] = mine.get(k, 0) + c
        return LogHistogram(self.zero + other.zero, pos, neg)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogHistogram) and self.encode() == other.encode()

    def __hash__(self) -> int:
        return hash(self.encode())

    def __repr__(self) -> str:
        buckets = len(self.positive) + len(self.negative)
        return f"LogHistogram(count={self.count}, buckets={buckets})"

    @staticmethod
    def value_of(index: int, sign: int) -> float:
        """The value a bucket reads back as (``sign`` 1 or -1)."""
        return sign * math.exp(index * _LOG_GAMMA - _LOG_MID)

    def at_rank(self, rank: int) -> float:
        """The value read for the item of 0-based ``rank`` in ascending order."""
        if not 0 <= rank < self.count:
            raise ValueError(f"rank {rank} is outside 0..{self.count - 1}")
        seen = 0
        for k in sorted(self.negative, reverse=True):  # the most negative first
            seen += self.negative[k]
            if rank < seen:
                return self.value_of(k, -1)
        seen += self.zero
        if rank < seen:
            return 0.0
        for k in sorted(self.positive):
            seen += self.positive[k]
            if rank < seen:
                return self.value_of(k, 1)
        raise AssertionError("unreachable: the ranks are counted")

    def percentile(self, p: float) -> float:
        """numpy's ``linear`` percentile (0 <= p <= 100) of the values read back: the two
        items around rank ``(count - 1) p / 100`` interpolated (NaN when empty)."""
        n = self.count
        if n == 0:
            return math.nan
        r = (n - 1) * p / 100.0
        i = math.floor(r)
        a, b = self.at_rank(i), self.at_rank(min(i + 1, n - 1))
        return a + (b - a) * (r - i)

    # --- bytes ------------------------------------------------------------------------------

    def encode(self) -> bytes:
        out = bytearray([VERSION])
        _varint(out, self.zero)
        for store in (self.positive, self.negative):
            if not store:
                _varint(out, 0)
                _varint(out, 0)
                continue
            low, high = min(store), max(store)
            _varint(out, (low << 1) ^ (low >> 63))
            _varint(out, high - low + 1)
            for k in range(low, high + 1):
                _varint(out, store.get(k, 0))
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> LogHistogram:
        """The histogram ``encode`` wrote, or a ValueError saying what is wrong."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"a histogram is bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) > MAX_BYTES:
            raise ValueError(f"a histogram is at most {MAX_BYTES} bytes, got {len(data)}")
        if not data or data[0] != VERSION:
            got = data[0] if data else "nothing"
            raise ValueError(f"histogram version {got} is not {VERSION}")
        pos = 1
        zero, pos = _read(data, pos, "zero count")
        stores: list[dict[int, int]] = []
        for name in ("positive", "negative"):
            zz, pos = _read(data, pos, f"{name} offset")
            low = (zz >> 1) ^ -(zz & 1)
            length, pos = _read(data, pos, f"{name} length")
            if length > MAX_BUCKETS:
                raise ValueError(f"{name} store has {length} buckets, at most {MAX_BUCKETS}")
            if length and not (low >= -_MAX_INDEX and low + length - 1 <= _MAX_INDEX):
                raise ValueError(f"{name} store's indexes {low}.. are outside +-{_MAX_INDEX}")
            store = {}
            for k in range(low, low + length):
                count, pos = _read(data, pos, f"{name} count")
                if count:
                    store[k] = count
            stores.append(store)
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} trailing bytes after the histogram")
        return cls(zero, stores[0], stores[1])


def _varint(out: bytearray, value: int) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _read(data: bytes, pos: int, what: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError(f"histogram truncated in its {what}")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise ValueError(f"histogram's {what} is a varint longer than 10 bytes")
    if value > _MAX_COUNT:
        raise ValueError(f"histogram's {what} {value} is past 2^63 - 1")
    return value, pos
