"""TLS at the cluster's load balancer: a push over HTTPS trusting the tier's CA is accepted; a
client trusting another CA is refused at the handshake; plain HTTP to the TLS port is not
served. (The fault tests push every load through the same https:// URL.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from apm.tls import client_context
from loadgen.settings import metrics_url
from tests.cluster.conftest import Cluster
from tests.cluster.support import push_snapshot
from tests.support.certs import make_ca

pytestmark = pytest.mark.cluster


def test_the_lb_serves_https_with_the_tiers_ca_only(cluster: Cluster, tmp_path: Path) -> None:
    layout = cluster.layout
    url = metrics_url(layout.lb_url)
    # A metric the load sends but no probe query reads: its topic exists already.
    metric = f"{cluster.probes['ingest'].prefix}mem.used_pct"
    assert url.startswith(f"https://{layout.host}:{layout.lb_port}/")
    trusted = push_snapshot(url, cluster.key, metric, client_context(layout.lb_tls_ca), "tls-probe")
    assert trusted.status_code == 202, trusted.text

    other = make_ca(tmp_path / "other", "other-ca")
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        push_snapshot(url, cluster.key, metric, client_context(other.cert), "tls-probe")

    # nginx answers a plain request on its TLS port with its own 400; nothing reaches an ingest.
    plain = push_snapshot(url.replace("https://", "http://", 1), cluster.key, metric)
    assert plain.status_code == 400 and "HTTPS port" in plain.text, plain.text
