"""A clean Debian host for the package tests: a minimal bookworm root made by mmdebstrap from
Debian's packages (the mirror this machine's apt uses), cached as a tarball outside the clone
(``~/.cache/apm/cleanroot/``, keyed by suite, variant, package list, architecture and mirror,
as ``~/.m2`` holds the jars) and unpacked fresh for every test; commands run in it through
chroot, with no network unless the test gives it a network namespace of its own (a veth pair
with two link-local addresses the test assigns and removes). Needs root."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import random
import re
import shlex
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CleanHost",
    "Link",
    "debian_mirror",
    "root_tarball",
    "sweep_stale_links",
    "unit_service",
    "veth_netns",
]

SUITE = "bookworm"
VARIANT = "minbase"
# What a minimal server running the agent has: Debian's python3.11 and adduser (the package's
# dependencies besides the essential set). Nothing else: dpkg -i must work with no network.
PACKAGES = ("adduser", "python3.11")
log = logging.getLogger(__name__)
CACHE = Path(os.environ.get("APM_CACHE_DIR", Path.home() / ".cache" / "apm")) / "cleanroot"


def debian_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian archive URI this machine's apt uses for the main suites."""
    texts = [p.read_text() for p in sorted(sources.glob("sources.list.d/*.sources"))]
    texts += [p.read_text() for p in [sources / "sources.list"] if p.exists()]
    for text in texts:
        for uri in re.findall(r"(?m)^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text):
            if re.search(r"/debian/?$", uri):
                return uri.rstrip("/")
    return "http://deb.debian.org/debian"


def root_tarball() -> Path:
    """The cached root, built once per machine (under a lock: parallel tests wait for it)."""
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    mirror = debian_mirror()
    key = hashlib.sha256(f"{SUITE} {VARIANT} {sorted(PACKAGES)} {arch} {mirror}".encode())
    path = CACHE / f"{SUITE}-{VARIANT}-{arch}-{key.hexdigest()[:12]}.tar"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = path.with_name(path.name + ".partial")
            subprocess.run(
                [
                    "mmdebstrap",
                    "--quiet",
                    f"--variant={VARIANT}",
                    f"--include={','.join(PACKAGES)}",
                    "--mode=root",
                    "--format=tar",
                    SUITE,
                    str(partial),
                    mirror,
                ],
                check=True,
                timeout=900,
            )
            partial.rename(path)
    return path


def unit_service(unit_text: str) -> dict[str, list[str]]:
    """The [Service] directives of a systemd unit, each with every value it was given."""
    service: dict[str, list[str]] = {}
    section = ""
    for line in unit_text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            name, value = line.split("=", 1)
            service.setdefault(name, []).append(value)
    return service


@dataclass
class Link:
    """A network namespace joined to this host by a veth pair: ``host_addr`` on this side,
    ``peer_addr`` inside ``netns``, both link-local (169.254.0.0/16, /30 between them)."""

    netns: str
    host_if: str
    host_addr: str
    peer_addr: str

    def cut(self) -> None:
        subprocess.run(["ip", "link", "set", self.host_if, "down"], check=True)

    def restore(self) -> None:
        subprocess.run(["ip", "link", "set", self.host_if, "up"], check=True)


# The names veth_netns gives: namespace apm-<10 hex>, host end apmh<10 hex>, peer apmn<10 hex>
# (a uuid's first 10 hex digits: at most 15 characters, IFNAMSIZ). While a link is in use its
# lock file under LOCKS is held; one whose lock nobody holds was left by a dead session.
LOCKS = Path("/run/apm-cleanhost")
_swept = False


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


def _drop(suffix: str) -> list[str]:
    """Deletes the namespace and host veth end named by ``suffix`` (the peer goes with them);
    returns what failed, each as one line, for the caller to log or raise."""
    failures = []
    namespaces = _ip("netns", "list", check=False).stdout.split()
    if f"apm-{suffix}" in namespaces:
        done = _ip("netns", "del", f"apm-{suffix}", check=False)
        if done.returncode:
            failures.append(f"ip netns del apm-{suffix}: {done.stderr.strip()}")
    if _ip("link", "show", f"apmh{suffix}", check=False).returncode == 0:
        done = _ip("link", "del", f"apmh{suffix}", check=False)
        if done.returncode:
            failures.append(f"ip link del apmh{suffix}: {done.stderr.strip()}")
    return failures


def sweep_stale_links() -> list[str]:
    """Deletes the namespaces and veth ends of veth_netns's naming scheme whose session died
    (no one holds their lock; a live session's are left alone); returns the suffixes swept."""
    names = _ip("netns", "list", check=False).stdout.split()
    names += re.findall(r"^\d+: ([^:@\s]+)", _ip("-o", "link", "show", check=False).stdout, re.M)
    suffixes = {m.group(1) for name in names if (m := re.fullmatch(r"apm[-h]([0-9a-f]{10})", name))}
    LOCKS.mkdir(parents=True, exist_ok=True)
    swept = []
    for suffix in sorted(suffixes):
        with open(LOCKS / f"{suffix}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live session's
            for failure in _drop(suffix):
                log.error("cleanhost: a stale link stays: %s", failure)
            swept.append(suffix)
        (LOCKS / f"{suffix}.lock").unlink(missing_ok=True)
    return swept


@contextmanager
def veth_netns() -> Iterator[Link]:
    """A fresh namespace and veth pair on a random 169.254.x.y/30; both gone afterwards (the
    first call in a process first sweeps what dead sessions left). A failed cleanup is logged
    as an error, and raised unless the body is already raising (that error is the one shown)."""
    global _swept
    if not _swept:
        _swept = True
        sweep_stale_links()
    suffix = uuid.uuid4().hex[:10]
    octet, base = random.randrange(64, 250), random.randrange(0, 63) * 4
    link = Link(f"apm-{suffix}", f"apmh{suffix}", f"169.254.{octet}.{base + 1}", "")
    link.peer_addr = f"169.254.{octet}.{base + 2}"
    peer_if = f"apmn{suffix}"
    LOCKS.mkdir(parents=True, exist_ok=True)
    with open(LOCKS / f"{suffix}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _ip("netns", "add", link.netns)
            _ip("link", "add", link.host_if, "type", "veth", "peer", "name", peer_if)
            _ip("link", "set", peer_if, "netns", link.netns)
            _ip("addr", "add", f"{link.host_addr}/30", "dev", link.host_if)
            _ip("link", "set", link.host_if, "up")
            _ip("-n", link.netns, "addr", "add", f"{link.peer_addr}/30", "dev", peer_if)
            _ip("-n", link.netns, "link", "set", peer_if, "up")
            _ip("-n", link.netns, "link", "set", "lo", "up")
            yield link
        finally:
            failures = _drop(suffix)
            for failure in failures:
                log.error("cleanhost: cleanup failed, a link stays: %s", failure)
            if not failures:
                (LOCKS / f"{suffix}.lock").unlink(missing_ok=True)
    if failures:  # reached only when the body did not raise
        raise RuntimeError("cleanhost: cleanup failed: " + "; ".join(failures))


@dataclass
class CleanHost:
    """A fresh copy of the clean root at ``root``; ``hostname`` is its own host name."""

    root: Path
    hostname: str

    @classmethod
    def fresh(cls, where: Path, hostname: str) -> CleanHost:
        where.mkdir(parents=True)
        subprocess.run(
            ["tar", "-xf", str(root_tarball()), "-C", str(where), "--numeric-owner"],
            check=True,
            timeout=300,
        )
        return cls(where, hostname)

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def command(
        self,
        argv: Sequence[str],
        *,
        user: str | None = None,
        link: Link | None = None,
        env: Mapping[str, str] | None = None,
        umask: str = "0022",
    ) -> list[str]:
        """``argv`` run inside the root: its own UTS (its host name), mount and PID namespaces
        with its own /proc; in ``link``'s network namespace, else in an empty one (no network);
        as ``user`` (setpriv, names resolved in the root) with only ``env`` in the env."""
        net = ["ip", "netns", "exec", link.netns] if link else ["unshare", "--net"]
        as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"] if user else []
        environment = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", **(env or {})}
        inner = [
            "chroot",
            str(self.root),
            "env",
            "-i",
            *(f"{k}={v}" for k, v in environment.items()),
            *as_user,
            *argv,
        ]
        script = f'hostname {shlex.quote(self.hostname)} && umask {umask} && exec "$@"'
        return [
            *net,
            "unshare",
            "--uts",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            f"--mount-proc={self.root / 'proc'}",
            "sh",
            "-c",
            script,
            "sh",
            *inner,
        ]

    def run(
        self, argv: Sequence[str], *, timeout: float = 120, check: bool = True, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.command(argv, **kwargs),  # type: ignore[arg-type]
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{shlex.join(argv)} in {self.root} exited {result.returncode}:\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def install(self, deb: Path) -> subprocess.CompletedProcess[str]:
        """``dpkg -i`` of ``deb`` (copied in) with no network."""
        inside = self.path("/tmp") / deb.name
        shutil.copy(deb, inside)
        try:
            return self.run(["dpkg", "-i", f"/tmp/{deb.name}"])
        finally:
            inside.unlink(missing_ok=True)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.support.cleanhost DIR [--install DEB]``: a fresh clean root at DIR
    (replacing one there), the package installed; for ``make bench-agent``, which may not
    import the tests."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.support.cleanhost")
    parser.add_argument("dir", type=Path)
    parser.add_argument("--install", type=Path, help="a .deb to dpkg -i (no network)")
    args = parser.parse_args(argv)
    shutil.rmtree(args.dir, ignore_errors=True)
    host = CleanHost.fresh(args.dir, "clean-bench")
    if args.install:
        host.install(args.install)
    print(host.root)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
