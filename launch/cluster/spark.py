"""The cluster's Spark: a standalone master and its workers, from the Spark that pyspark ships.

pyspark carries Spark's jars and ``bin/spark-class``. spark-class asks Spark's launcher
(``org.apache.spark.launcher.Main``) for the daemon's JVM command and then execs it; here the
launcher is asked the same, and the command it gives is started directly, so the pid is the
daemon's own and Spark's JDK 17 module options come from Spark itself. pyspark has no RELEASE
file, so the launcher (and each worker, when it launches executors) is told the Scala version.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from launch.cluster.layout import ClusterLayout
from launch.cluster.node import Node, marker
from launch.stack.config import StackSettings

__all__ = ["daemon_args", "daemon_env", "launch_command", "nodes", "spark_home"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def scala_version(home: Path) -> str:
    """From the launcher jar's name, ``spark-launcher_2.13-4.2.0.jar`` -> ``2.13``."""
    found = sorted((home / "jars").glob("spark-launcher_*.jar"))
    if not found:
        raise RuntimeError(f"no spark-launcher jar under {home / 'jars'}: is pyspark installed?")
    return found[-1].name.split("_", 1)[1].split("-", 1)[0]


def daemon_args(layout: ClusterLayout, node: str) -> list[str]:
    """The daemon's main class and arguments, as spark-class would be given them."""
    if node == "spark-master":
        return [
            MASTER_CLASS,
            "--host",
            layout.host,
            "--port",
            str(layout.spark_master_port),
            "--webui-port",
            str(layout.spark_master_ui_port),
        ]
    i = layout.spark_workers.index(node)
    return [
        WORKER_CLASS,
        "--host",
        layout.host,
        "--webui-port",
        str(layout.spark_worker_ui_ports[i]),
        "--cores",
        str(layout.spark_worker_cores),
        "--memory",
        layout.spark_worker_memory,
        "--work-dir",
        str(layout.home(node) / "work"),
        layout.spark_master_url,
    ]


def daemon_env(layout: ClusterLayout, node: str, home: Path) -> dict[str, str]:
    """What the launcher and the daemon run with; a worker hands it on to its executors."""
    return {
        "SPARK_HOME": str(home),
        "SPARK_SCALA_VERSION": scala_version(home),
        "SPARK_DAEMON_MEMORY": layout.spark_daemon_heap,
        "SPARK_DAEMON_JAVA_OPTS": f"{marker(node)} -Djava.net.preferIPv4Stack=true",
        "SPARK_LOCAL_IP": layout.host,
        "SPARK_LOG_DIR": str(layout.home(node)),
        "SPARK_WORKER_DIR": str(layout.home(node) / "work"),
    }


def parse_launcher_output(out: bytes) -> list[str]:
    """The launcher prints the command as NUL-terminated arguments (after a blank line)."""
    return [arg.strip("\r\n") for arg in out.decode().split("\0") if arg.strip()]


Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]


def launch_command(
    layout: ClusterLayout,
    stack: StackSettings,
    node: str,
    run: Runner = subprocess.run,
    home: Path | None = None,
) -> list[str]:
    """The daemon's JVM command, as Spark's launcher builds it for spark-class."""
    home = home or spark_home()
    env = daemon_env(layout, node, home)
    done = run(
        [
            stack.java,
            "-cp",
            str(home / "jars" / "*"),
            "org.apache.spark.launcher.Main",
            *daemon_args(layout, node),
        ],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"spark launcher failed for {node}: {done.stderr.decode()[-400:]}")
    argv = parse_launcher_output(done.stdout)
    if not any(marker(node) == arg for arg in argv):
        raise RuntimeError(f"spark launcher's command for {node} lacks {marker(node)}: {argv}")
    return argv


def _json(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as answer:
            value = json.load(answer)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _master_alive(layout: ClusterLayout) -> bool:
    state = _json(f"{layout.spark_master_ui_url}/json")
    return state is not None and state.get("status") == "ALIVE"


def _worker_registered(layout: ClusterLayout, node: str) -> bool:
    """The worker answers and the master lists it, by its id, as ALIVE."""
    port = layout.spark_worker_ui_ports[layout.spark_workers.index(node)]
    own = _json(f"http://{layout.host}:{port}/json")
    master = _json(f"{layout.spark_master_ui_url}/json")
    if own is None or master is None:
        return False
    return any(
        w.get("id") == own.get("id") and w.get("state") == "ALIVE"
        for w in master.get("workers", [])
    )


def _prepare(layout: ClusterLayout, node: str) -> None:
    (layout.home(node) / "work").mkdir(parents=True, exist_ok=True)


def nodes(layout: ClusterLayout, stack: StackSettings, home: Path | None = None) -> list[Node]:
    home = home or spark_home()
    healthy: Mapping[str, Callable[[], bool]] = {
        "spark-master": partial(_master_alive, layout),
        **{w: partial(_worker_registered, layout, w) for w in layout.spark_workers},
    }
    ports = {
        "spark-master": (layout.spark_master_port, layout.spark_master_ui_port),
        **{
            w: (p,) for w, p in zip(layout.spark_workers, layout.spark_worker_ui_ports, strict=True)
        },
    }
    return [
        Node(
            name,
            layout.home(name),
            tuple((layout.host, p) for p in ports[name]),
            prepare=partial(_prepare, layout, name),
            command=partial(launch_command, layout, stack, name, home=home),
            healthy=healthy[name],
            env=daemon_env(layout, name, home),
        )
        for name in ("spark-master", *layout.spark_workers)
    ]
