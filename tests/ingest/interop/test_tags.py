"""Host tags from OTLP resource attributes and remote_write labels (ingest.interop.tags):
the mapping, the conflicts within a request, and the agent's tags winning over a protocol's
(ingest.tags), through the app over the fake publisher."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from apm.tags import MAX_TAGS, decode_tags_record
from ingest.interop.settings import InteropSettings
from ingest.interop.tags import OTLP_RESOURCE_TAGS, RequestTags, mapped_tags, mapping_error
from ingest.tags import ServerTags
from tests.ingest.interop import test_otlp as otlp
from tests.ingest.interop import test_remote_write as rw

pytestmark = pytest.mark.unit


def _published(fake_publisher) -> list[tuple[str, dict[str, str]]]:
    return [decode_tags_record(v)[:2] for _, v in fake_publisher.tags]


def test_the_conventions_map_to_short_keys_and_placeholders_and_bad_values_are_left_out():
    attrs = {
        "host.name": "web-1",
        "service.name": "checkout",
        "deployment.environment": "prod",
        "deployment.environment.name": "staging",  # the newer name wins
        "cloud.region": "x" * 200,  # past the tag rule's 128 characters
        "telemetry.sdk.language": "python",  # not mapped
    }
    tags, refused = mapped_tags(attrs, OTLP_RESOURCE_TAGS)
    assert tags == {"service": "checkout", "env": "staging"} and refused == 1
    assert mapped_tags({"service.name": "unknown_service:python3"}, OTLP_RESOURCE_TAGS) == ({}, 0)


def test_keys_a_requests_sources_disagree_on_are_left_out_for_good():
    tags = RequestTags()
    tags.add("web-1", {"service": "checkout", "env": "prod"})
    tags.add("web-1", {"service": "search", "env": "prod"})
    tags.add("web-1", {"service": "checkout"})  # the key stays out once split
    tags.add("web-2", {"service": "search"})
    assert tags.of("web-1") == {"env": "prod"} and tags.of("web-2") == {"service": "search"}
    assert tags.dropped == 1 and tags.of("nowhere") == {}


@pytest.mark.parametrize(
    "mapping,identifying,problem",
    [
        ({"host.name": "host"}, {"host.name"}, "identifies the server"),
        ({"service.name": "Service"}, set(), "not a tag key"),
        ({"service.name": "server"}, set(), "not a tag key"),
        ({f"a{i}": f"k{i}" for i in range(MAX_TAGS + 1)}, set(), "more than a server's 32"),
    ],
)
def test_a_mapping_that_cannot_make_tags_is_refused(mapping, identifying, problem):
    assert problem in (mapping_error(mapping, identifying) or "")


def test_settings_refuse_a_bad_mapping_naming_it():
    with pytest.raises(ValidationError, match=r"otlp_resource_tags: 'service\.instance\.id'"):
        InteropSettings(otlp_resource_tags={"service.instance.id": "instance"})
    with pytest.raises(ValidationError, match=r"remote_write_tag_labels: 'instance'"):
        InteropSettings(remote_write_tag_labels={"instance": "instance"})
    assert InteropSettings(otlp_resource_tags={}).otlp_resource_tags == {}


def test_an_otlp_resource_gives_its_server_tags_once(make_client, fake_publisher):
    client = make_client()
    resource = {"host.name": "web-1", "service.name": "checkout", "deployment.environment": "prod"}
    t = otlp.now_ns()
    for i in range(3):
        metric = otlp.gauge("queue.depth", (float(i), t + i * otlp.NS))
        otlp.answer(otlp.post(client, otlp.request([metric], resource)))
    assert _published(fake_publisher) == [("web-1", {"service": "checkout", "env": "prod"})]


def test_remote_write_job_is_its_servers_tag(make_client, fake_publisher):
    client = make_client()
    ms = int(time.time() * 1000)
    body = rw.write_request(
        [
            ({"__name__": "up", "instance": "node-1:9100", "job": "node"}, [(1.0, ms)]),
            ({"__name__": "up", "instance": "node-2:9100", "job": "node"}, [(1.0, ms)]),
            ({"__name__": "load1", "instance": "node-2:9100", "job": "other"}, [(0.5, ms)]),
        ]
    )
    assert rw.post(client, body).status_code == 204
    # node-2's two series disagree on job: it is left out of node-2's tags, which leaves
    # nothing to say of node-2 (a protocol that says nothing erases nothing).
    assert _published(fake_publisher) == [("node-1_9100", {"job": "node"})]


def test_the_agents_tags_win_over_a_protocols():
    sent: list[tuple[bytes, bytes]] = []
    counts: list[tuple[str, int]] = []
    tags = ServerTags(1 << 20, counted=lambda outcome, n: counts.append((outcome, n)))
    assert tags.publish({"web-1": (1.0, {"service": "api"})}, sent.extend, "otlp") == 1
    assert tags.publish({"web-1": (2.0, {"role": "web"})}, sent.extend) == 1  # the agent
    assert tags.publish({"web-1": (3.0, {"service": "api"})}, sent.extend, "otlp") == 0
    assert tags.publish({"web-1": (4.0, {"role": "web"})}, sent.extend) == 0  # unchanged
    assert [decode_tags_record(v)[1] for _, v in sent] == [{"service": "api"}, {"role": "web"}]
    assert counts == [("published", 1), ("published", 1), ("agent_kept", 1)]
