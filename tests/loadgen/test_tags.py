"""The synthetic fleet's host tags (loadgen.tags): a pure function of index and seed, valid
under the shared rule, in the snapshots the loadgen sends."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.tags import tags_error
from loadgen.fleet import Fleet
from loadgen.payload import build_request, split_tick, stamp, template
from loadgen.tags import DCS, ENVS, ROLES, _splitmix64, fleet_tags, server_tags

pytestmark = pytest.mark.unit


@given(st.integers(0, 2**32 - 1), st.integers(-(2**40), 2**40))
def test_tags_are_a_pure_valid_function_of_index_and_seed(index, seed):
    tags = server_tags(index, seed)
    assert tags == server_tags(index, seed)
    assert tags_error(tags) is None
    assert tags["role"] == ROLES[index % len(ROLES)]
    assert tags["dc"] in DCS and tags["env"] in ENVS


def test_known_assignment_and_shares():
    # Pinned: a change of the assignment is a change of every end-to-end truth over tags.
    assert [(t["dc"], t["env"]) for t in fleet_tags(6, 42)] == [
        ("us-2", "prod"),
        ("eu-1", "prod"),
        ("eu-1", "prod"),
        ("us-2", "staging"),
        ("us-2", "prod"),
        ("us-1", "prod"),
    ]
    # The hash is SplitMix64: its published first output from state 0.
    assert _splitmix64(0) == 0xE220A8397B1DCDAF
    tags = fleet_tags(10_000, 42)
    dcs, envs = Counter(t["dc"] for t in tags), Counter(t["env"] for t in tags)
    assert set(dcs) == set(DCS) and all(2200 < n < 2800 for n in dcs.values())
    assert 7600 < envs["prod"] < 8400 and 1200 < envs["staging"] < 1800 and envs["dev"] > 300
    assert fleet_tags(10_000, 43) != tags  # the seed matters
    assert fleet_tags(20, 42) == tags[:20]  # the fleet's size does not


def test_the_name_and_the_role_tag_agree():
    fleet = Fleet(servers=30, metrics=2)
    pairs = zip(fleet.names, fleet.tags, strict=True)
    assert all(name.split("-")[0] == t["role"] for name, t in pairs)


@pytest.mark.parametrize("gzip_level", [0, 1])
def test_snapshots_carry_their_server_s_tags_and_templates_keep_them(gzip_level):
    fleet = Fleet(servers=25, metrics=3, silent_fraction=0.0)
    [batch, *_] = list(split_tick(fleet.step(1_763_800_000), 10))
    built = build_request(batch, fleet.names, fleet.metric_names, "", gzip_level, fleet.tags)
    plain = template(batch, fleet.names, fleet.metric_names, "", fleet.tags)
    assert stamp(plain, batch.ts, gzip_level) == built
    doc = json.loads(plain.body)
    for snapshot, i in zip(doc["snapshots"], batch.servers.tolist(), strict=True):
        assert snapshot["tags"] == server_tags(i, fleet.seed)
    untagged = build_request(batch, fleet.names, fleet.metric_names, "", 0)
    assert all("tags" not in s for s in json.loads(untagged.body)["snapshots"])
