"""The JVM helpers every engine launcher shares (the single-node stack and the cluster): the
JDK check, a JVM's command line, and the options Cassandra needs on JDK 17."""

from __future__ import annotations

import shutil
import subprocess

from launch.stack.config import StackSettings
from launch.supervisor import StartError

__all__ = ["CASSANDRA_JDK17", "check_java", "jvm_command"]

# Cassandra 5 on JDK 17 needs these (conf/jvm17-server.options in its distribution).
CASSANDRA_JDK17 = [
    "-Djdk.attach.allowAttachSelf=true",
    *[
        f"--add-exports={m}=ALL-UNNAMED"
        for m in (
            "java.base/jdk.internal.misc",
            "java.management.rmi/com.sun.jmx.remote.internal.rmi",
            "java.rmi/sun.rmi.registry",
            "java.rmi/sun.rmi.server",
            "java.sql/java.sql",
            "java.base/java.lang.ref",
            "jdk.unsupported/sun.misc",
            "jdk.compiler/com.sun.tools.javac.file",
            "jdk.attach/sun.tools.attach",
        )
    ],
    *[
        f"--add-opens={m}=ALL-UNNAMED"
        for m in (
            "java.base/java.lang.module",
            "java.base/jdk.internal.loader",
            "java.base/jdk.internal.ref",
            "java.base/jdk.internal.reflect",
            "java.base/jdk.internal.math",
            "java.base/jdk.internal.module",
            "java.base/jdk.internal.util.jar",
            "jdk.management/com.sun.management.internal",
            "java.base/sun.nio.ch",
            "java.base/java.io",
            "java.base/java.lang.reflect",
            "jdk.compiler/com.sun.tools.javac",
            "java.base/java.lang",
            "java.base/java.util",
        )
    ],
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
]


def jvm_command(settings: StackSettings, name: str, heap: str) -> list[str]:
    """The JVM's command line up to its main class: a fixed heap, G1, IPv4, and the
    ``apm.stack`` property that marks the JVM as ours (a stale pid reused by another process
    is then not mistaken for it)."""
    return [
        settings.java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-Djava.net.preferIPv4Stack=true",
        f"-Dapm.stack={name}",
    ]


def check_java(settings: StackSettings) -> None:
    """A StartError unless ``settings.java`` is a JDK 17 or newer."""
    if shutil.which(settings.java) is None:
        raise StartError(f"no JDK: `{settings.java}` not found on PATH (install OpenJDK 17)")
    out = subprocess.run([settings.java, "-version"], capture_output=True, text=True).stderr
    major = out.split('"')[1].split(".")[0] if '"' in out else "0"
    if not major.isdigit() or int(major) < 17:
        raise StartError(f"JDK 17 or newer needed, found: {out.splitlines()[0] if out else '?'}")
