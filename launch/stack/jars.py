"""Resolves the engines' jars from Maven Central through the project's pom, once.

Each engine gets its own folder under the jar cache; a marker holding the pom's hash makes a
second fetch a no-op until the pom changes.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from launch.stack.config import StackSettings

__all__ = ["ENGINES", "FetchError", "aggregator_jar", "fetch", "jar_dir", "spark_jars"]

ENGINES = ("kafka", "cassandra", "spark")
_MARKER = ".complete"


class FetchError(RuntimeError):
    """A jar resolution failed; the message names the cause and the log."""


def _pom(settings: StackSettings) -> Path:
    return settings.deploy / "pom.xml"


def _pom_digest(settings: StackSettings) -> str:
    return hashlib.sha256(_pom(settings).read_bytes()).hexdigest()


def jar_dir(settings: StackSettings, engine: str) -> Path:
    return settings.jars / engine


def _is_fresh(settings: StackSettings, engine: str) -> bool:
    marker = jar_dir(settings, engine) / _MARKER
    return marker.exists() and marker.read_text().strip() == _pom_digest(settings)


def pinned_spark_version(settings: StackSettings) -> str:
    match = re.search(r"<spark\.version>([^<]+)</spark\.version>", _pom(settings).read_text())
    if not match:
        raise FetchError(f"{_pom(settings)} has no <spark.version>")
    return match.group(1)


def _check_pyspark(settings: StackSettings) -> None:
    try:
        import pyspark
    except ImportError:
        return  # a server without the aggregator extra has no Spark to match
    wanted = pinned_spark_version(settings)
    if pyspark.__version__ != wanted:
        raise FetchError(
            f"pyspark {pyspark.__version__} is installed but the pom pins the Kafka connector "
            f"to {wanted}; they must be equal (reinstall with `make install`)"
        )


def fetch(settings: StackSettings, engines: tuple[str, ...] = ENGINES, *, log=sys.stderr) -> None:
    """Copies each engine's runtime classpath into the cache, printing progress."""
    if shutil.which(settings.mvn) is None:
        raise FetchError(f"`{settings.mvn}` not found on PATH: install Maven to fetch the jars")
    for engine in engines:
        if engine == "spark":
            _check_pyspark(settings)
        if _is_fresh(settings, engine):
            print(f"jars: {engine} up to date ({jar_dir(settings, engine)})", file=log)
            continue
        target = jar_dir(settings, engine)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        log_path = settings.var / "logs" / f"mvn-{engine}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        print(f"jars: resolving {engine} from Maven Central (log: {log_path}) ...", file=log)
        started = time.monotonic()
        cmd = [
            settings.mvn,
            "-B",
            "-f",
            str(_pom(settings)),
            "-P",
            engine,
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={target}",
        ]
        with log_path.open("w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            while proc.poll() is None:
                time.sleep(2.0)
                count = len(list(target.glob("*.jar")))
                print(f"jars: {engine}: {count} jars, {time.monotonic() - started:.0f}s", file=log)
        if proc.returncode != 0:
            raise FetchError(f"mvn failed for {engine} (exit {proc.returncode}); see {log_path}")
        (target / _MARKER).write_text(_pom_digest(settings))
        count = len(list(target.glob("*.jar")))
        print(f"jars: {engine}: {count} jars in {time.monotonic() - started:.0f}s", file=log)


def _artifact(jar: Path) -> str:
    """``scala-library-2.13.15.jar`` -> ``scala-library``."""
    return re.sub(r"-\d[\w.\-]*$", "", jar.stem)


def _jvm_sources(settings: StackSettings) -> Path:
    return settings.root / "aggregator" / "jvm"


def _jvm_digest(settings: StackSettings) -> str:
    """Of the JVM module's pom and main sources: a change to either rebuilds the jar."""
    root = _jvm_sources(settings)
    digest = hashlib.sha256()
    for path in [root / "pom.xml", *sorted((root / "src" / "main").rglob("*.java"))]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def aggregator_jar(settings: StackSettings | None = None, *, log=sys.stderr) -> Path:
    """The aggregator's JVM operator (aggregator/jvm), built by Maven into the jar cache the
    first time and whenever its sources change. Its unit tests run in ``make test-jvm``."""
    settings = settings or StackSettings()
    target = jar_dir(settings, "apm")
    jar = target / "apm-aggregator-jvm.jar"
    digest = _jvm_digest(settings)
    marker = target / _MARKER
    if jar.exists() and marker.exists() and marker.read_text().strip() == digest:
        return jar
    if shutil.which(settings.mvn) is None:
        raise FetchError(f"`{settings.mvn}` not found on PATH: install Maven to build the jar")
    target.mkdir(parents=True, exist_ok=True)
    log_path = settings.var / "logs" / "mvn-aggregator-jvm.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    print(f"jars: building the aggregator's JVM operator (log: {log_path}) ...", file=log)
    pom = _jvm_sources(settings) / "pom.xml"
    # The build directory stays out of the source tree, so a read-only checkout builds too.
    build = target / "build"
    cmd = [settings.mvn, "-B", "-f", str(pom), "package", "-DskipTests", f"-DbuildDir={build}"]
    with log_path.open("w") as out:
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        raise FetchError(f"mvn failed to build the aggregator jar (exit {code}); see {log_path}")
    # A new file, then a rename: a running job keeps the jar it opened (overwriting it in
    # place would change a zip under a live JVM).
    fresh = target / "apm-aggregator-jvm.jar.new"
    shutil.copyfile(build / "apm-aggregator-jvm.jar", fresh)
    os.replace(fresh, jar)
    marker.write_text(digest)
    return jar


def spark_jars(settings: StackSettings | None = None) -> list[str]:
    """The jars to hand to Spark through ``spark.jars``: the Kafka source and what it needs
    beyond Spark itself, and the aggregator's own operator (``aggregator_jar``). Jars pyspark
    already ships (scala-library, hadoop-client, lz4 ...)
    are left out, so no class comes in two versions."""
    import pyspark

    settings = settings or StackSettings()
    if not _is_fresh(settings, "spark"):
        fetch(settings, ("spark",))
    bundled = {_artifact(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    connector = jar_dir(settings, "spark").glob("*.jar")
    return [
        *sorted(str(j) for j in connector if _artifact(j) not in bundled),
        str(aggregator_jar(settings)),
    ]
