"""The load balancer's generated nginx configuration, and the platform's cluster process table."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from launch.cluster import nginx, platform
from launch.cluster.layout import ClusterLayout
from tests.support.certs import make_ca
from tests.support.debs import require

pytestmark = pytest.mark.unit


def _cfg(tmp_path: Path) -> nginx.LbConfig:
    return nginx.LbConfig("127.0.0.1", 18000, ["127.0.0.1:18001", "127.0.0.1:18002"], tmp_path)


def test_every_replica_is_an_upstream_and_failed_requests_go_to_the_other(tmp_path: Path) -> None:
    text = nginx.render(_cfg(tmp_path))
    assert "listen 127.0.0.1:18000;" in text
    assert "server 127.0.0.1:18001 max_fails=1 fail_timeout=2s;" in text
    assert "server 127.0.0.1:18002 max_fails=1 fail_timeout=2s;" in text
    # POST is not idempotent to nginx: without non_idempotent a push is never retried.
    assert "proxy_next_upstream error timeout http_502 http_503 non_idempotent;" in text
    assert "proxy_next_upstream_tries 2;" in text
    assert "proxy_connect_timeout 500ms;" in text
    assert "proxy_pass http://apm_ingest;" in text


def test_no_replica_answering_is_a_503_with_retry_after_which_clients_retry(
    tmp_path: Path,
) -> None:
    text = nginx.render(_cfg(tmp_path))
    assert "error_page 502 504 =503 @unavailable;" in text
    assert "add_header Retry-After 1 always;" in text
    assert "return 503 '" in text


def test_state_stays_under_its_home_and_nginx_runs_in_the_foreground(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    text = nginx.render(cfg)
    assert f"pid {tmp_path / 'nginx.pid'};" in text
    assert f"error_log {tmp_path / 'error.log'} warn;" in text
    assert f"access_log {tmp_path / 'access.log'};" in text
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        assert f"{kind}_temp_path {tmp_path / 'tmp' / kind};" in text
    assert "/var/log" not in text and "/etc/nginx" not in text
    argv = nginx.command(cfg, nginx="/usr/sbin/nginx")
    assert argv[-2:] == ["-g", "daemon off;"]
    assert argv[argv.index("-c") + 1] == str(cfg.conf)
    assert argv[argv.index("-e") + 1] == str(tmp_path / "error.log")


def test_the_ingests_body_limit_decides_not_nginxs(tmp_path: Path) -> None:
    from ingest.settings import IngestSettings

    limit = nginx.CLIENT_MAX_BODY
    assert limit.endswith("m") and int(limit[:-1]) * 2**20 > IngestSettings().max_body_bytes
    assert IngestSettings().answer_timeout_s < nginx.READ_TIMEOUT_S


def test_no_upstream_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one ingest replica"):
        nginx.render(nginx.LbConfig("127.0.0.1", 18000, [], tmp_path))


def test_nginx_accepts_the_generated_configuration(tmp_path: Path) -> None:
    binary = require("nginx", "nginx")
    cfg = _cfg(tmp_path)
    nginx.write(cfg)
    check = subprocess.run(
        [*nginx.command(cfg, binary)[:-2], "-t"], capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stderr


def _tls_cfg(tmp_path: Path, client_ca: bool = False) -> nginx.LbConfig:
    ca = make_ca(tmp_path / "ca")
    cert, key = ca.issue("lb")
    return replace(
        _cfg(tmp_path), tls_cert=cert, tls_key=key, tls_client_ca=ca.cert if client_ca else None
    )


def test_plain_http_is_the_default(tmp_path: Path) -> None:
    text = nginx.render(_cfg(tmp_path))
    assert " ssl" not in text and "ssl_" not in text


def test_a_certificate_makes_the_listener_tls_only_and_the_upstream_hop_stays_http(
    tmp_path: Path,
) -> None:
    cfg = _tls_cfg(tmp_path)
    text = nginx.render(cfg)
    assert "listen 127.0.0.1:18000 ssl;" in text
    assert f"ssl_certificate {cfg.tls_cert};" in text
    assert f"ssl_certificate_key {cfg.tls_key};" in text
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in text
    assert "ssl_verify_client" not in text
    assert "proxy_pass http://apm_ingest;" in text and "keepalive 32;" in text
    mtls = nginx.render(_tls_cfg(tmp_path, client_ca=True))
    assert f"ssl_client_certificate {tmp_path / 'ca' / 'ca.pem'};" in mtls
    assert "ssl_verify_client on;" in mtls


def test_a_lone_certificate_or_client_ca_is_a_clear_error(tmp_path: Path) -> None:
    cfg = _tls_cfg(tmp_path)
    with pytest.raises(ValueError, match="tls_cert and tls_key go together"):
        nginx.render(replace(cfg, tls_key=None))
    with pytest.raises(ValueError, match="tls_client_ca needs tls_cert"):
        nginx.render(replace(_cfg(tmp_path), tls_client_ca=cfg.tls_cert))


def test_nginx_accepts_the_generated_tls_configuration(tmp_path: Path) -> None:
    binary = require("nginx", "nginx")
    cfg = _tls_cfg(tmp_path, client_ca=True)
    nginx.write(cfg)
    check = subprocess.run(
        [*nginx.command(cfg, binary)[:-2], "-t"], capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stderr


def test_the_layouts_lb_certificate_makes_its_url_https_and_reaches_nginx(
    tmp_path: Path,
) -> None:
    ca = make_ca(tmp_path / "ca")
    cert, key = ca.issue("lb")
    layout = ClusterLayout(root=tmp_path, lb_tls_cert=cert, lb_tls_key=key, lb_tls_ca=ca.cert)
    assert layout.lb_url == "https://127.0.0.1:18000"
    assert "listen 127.0.0.1:18000 ssl;" in nginx.render(platform._lb(layout))
    assert ClusterLayout(root=tmp_path).lb_url == "http://127.0.0.1:18000"
    with pytest.raises(ValidationError, match="lb_tls_cert and lb_tls_key go together"):
        ClusterLayout(root=tmp_path, lb_tls_cert=cert)


# --- the platform's processes on the cluster -----------------------------------------------


def test_platform_nodes_start_in_order_with_their_own_ports_and_homes(tmp_path: Path) -> None:
    layout = ClusterLayout(root=tmp_path)
    assert platform.nodes(layout) == (
        "ingest-1",
        "ingest-2",
        "lb",
        "aggregator-0",
        "aggregator-1",
        "dashboard",
    )
    specs = platform._specs(layout)
    assert "--port 18001 " in " ".join(specs["ingest-1"].command) + " "
    assert layout.kafka_bootstrap in specs["ingest-2"].command
    for node in platform.nodes(layout):
        proc = platform._process(layout, node)
        assert proc.home == tmp_path / "var" / "cluster" / node
        assert proc.log == proc.home / f"{node}.log"


def test_each_aggregator_is_one_shard_and_a_spark_application_on_the_master(
    tmp_path: Path,
) -> None:
    layout = ClusterLayout(root=tmp_path)
    specs = platform._specs(layout)
    for i, port in enumerate((19102, 19103)):
        spec = specs[f"aggregator-{i}"]
        argv = spec.command
        assert argv[argv.index("--shard") + 1] == f"{i}/2"
        assert argv[argv.index("--metrics-port") + 1] == str(port)
        assert spec.env["APM_AGGREGATOR_SPARK_MASTER"] == "spark://127.0.0.1:17077"
        conf = json.loads(spec.env["APM_AGGREGATOR_SPARK_CONF"])
        assert conf["spark.cores.max"] == "1" and conf["spark.executor.memory"] == "768m"
        assert spec.env["APM_AGGREGATOR_DRIVER_MEMORY"] == "768m"


def test_the_settings_read_the_spark_master_and_conf_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aggregator.settings import AggregatorSettings

    env = platform._aggregator_env(ClusterLayout(root=tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = AggregatorSettings()
    assert settings.spark_master == "spark://127.0.0.1:17077"
    assert settings.spark_conf["spark.cores.max"] == "1"
    monkeypatch.delenv("APM_AGGREGATOR_SPARK_MASTER")
    monkeypatch.delenv("APM_AGGREGATOR_SPARK_CONF")
    assert AggregatorSettings().spark_master == "" and AggregatorSettings().spark_conf == {}


def test_the_lb_is_marked_by_its_own_configuration(tmp_path: Path) -> None:
    layout = ClusterLayout(root=tmp_path)
    proc = platform._process(layout, "lb")
    assert proc.marker == f"-c {tmp_path / 'var' / 'cluster' / 'lb' / 'nginx.conf'}"
    assert platform._process(layout, "dashboard").marker.endswith("--port 18050")


def test_the_aggregator_builds_its_session_on_the_configured_master(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aggregator import cli, session
    from aggregator.settings import AggregatorSettings

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(session, "build_session", lambda name, **kw: calls.append(kw))
    monkeypatch.setattr(cli, "_local_jars", lambda settings: ["k.jar"])
    conf = {"spark.cores.max": "1"}
    cli._session(AggregatorSettings(spark_master="spark://h:7077", spark_conf=conf))
    cli._session(AggregatorSettings())
    assert calls[0]["master"] == "spark://h:7077" and calls[0]["extra"] == conf
    assert calls[1]["master"] is None and calls[1]["extra"] == {}
