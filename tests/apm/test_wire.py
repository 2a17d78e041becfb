"""apm.wire: the record encoding round-trips exactly and fills each chunk."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.wire import decode, encode_chunks

pytestmark = pytest.mark.unit


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True),
            st.floats(0, 2e9),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        min_size=1,
        max_size=200,
    )
)
def test_wire_round_trip_is_exact_and_chunked(rows):
    chunks = list(encode_chunks(rows, max_bytes=256))
    assert all(len(c) <= 256 or b"\n" not in c for c in chunks)
    # Full: the next chunk's first line would not have fit (an off-by-one once cut early).
    for chunk, following in itertools.pairwise(chunks):
        assert len(chunk) + 1 + len(following.split(b"\n")[0]) > 256
    assert [r for c in chunks for r in decode(c)] == [(s, float(t), float(v)) for s, t, v in rows]
