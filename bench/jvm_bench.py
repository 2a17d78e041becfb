"""One way to run a benchmark class of aggregator/jvm's test sources: compile the module
(``mvn test-compile`` into .cache/jvm-test, the build directory ``make test-jvm`` uses), then
``java`` with its classes, test classes and, when the class needs Spark, pyspark's jars.
Used by ``bench.aggregator_fixed`` and ``bench.aggregator_order``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from apm.settings import PROJECT_ROOT
from bench.base import progress

__all__ = ["command", "compile_tests", "java_version", "run"]

_JVM = PROJECT_ROOT / "aggregator" / "jvm"
_BUILD = PROJECT_ROOT / ".cache" / "jvm-test"


def compile_tests() -> None:
    progress("compiling aggregator/jvm (mvn test-compile) ...")
    subprocess.run(
        ["mvn", "-q", "-B", "-f", str(_JVM / "pom.xml"), "test-compile", f"-DbuildDir={_BUILD}"],
        check=True,
    )


def command(main_class: str, *args: object, spark: bool = False) -> list[str]:
    """The java command line that runs ``main_class`` (printed with the figures)."""
    paths = [str(_BUILD / "classes"), str(_BUILD / "test-classes")]
    if spark:
        import pyspark

        paths += map(str, sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")))
    return ["java", "-cp", ":".join(paths), f"io.apm.aggregator.{main_class}", *map(str, args)]


def run(cmd: list[str]) -> str:
    """Compiles, then runs ``cmd``; its standard output."""
    compile_tests()
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True)
    return out.stderr.splitlines()[0]
