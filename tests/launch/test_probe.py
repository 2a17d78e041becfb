"""launch/probe.py: free ports are never handed out twice by one process."""

from __future__ import annotations

import socket

import pytest

from launch import probe

pytestmark = pytest.mark.unit


class _SamePort:
    """A socket whose kernel hands out 40001 twice, then 40002: what two free_port calls in a
    row can get when the first port is free again by the second call."""

    ports = iter([40001, 40001, 40002])

    def __init__(self, *args: object) -> None:
        self.port = next(self.ports)

    def __enter__(self) -> _SamePort:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def bind(self, address: tuple[str, int]) -> None:
        pass

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_the_kernel_gives_twice_is_handed_out_once(monkeypatch):
    monkeypatch.setattr(probe, "_handed", set())
    monkeypatch.setattr(probe.socket, "socket", _SamePort)
    assert [probe.free_port(), probe.free_port()] == [40001, 40002]


def test_free_ports_are_distinct_and_bindable():
    ports = [probe.free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))
