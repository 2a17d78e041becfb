import numpy as np
import pytest

from apm.model import metric_name_error, server_name_error
from loadgen.fleet import QUANTUM, Fleet, metric_catalog, server_names

pytestmark = pytest.mark.unit

T0 = 1_763_800_000.0


def _run(fleet: Fleet, seconds: int, t0: float = T0):
    return [fleet.step(t0 + k) for k in range(seconds)]


def test_same_seed_same_samples_other_seed_other_samples(make_fleet):
    a, b = _run(make_fleet(seed=3), 20), _run(make_fleet(seed=3), 20)
    c = _run(make_fleet(seed=4), 20)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.values, y.values) and np.array_equal(x.alive, y.alive)
    assert not all(np.array_equal(x.values, z.values) for x, z in zip(a, c, strict=True))


def test_values_follow_their_processes(make_fleet):
    fleet = make_fleet(servers=200, metrics=10, silent_fraction=0.0)
    ticks = _run(fleet, 120)
    values = np.stack([t.values for t in ticks])  # (seconds, servers, metrics)
    kinds = [kind for _, kind in fleet.catalog]
    for col, kind in enumerate(kinds):
        v = values[:, :, col]
        if kind in ("walk", "drift"):
            assert v.min() >= 0 and v.max() <= 100
            assert v.std() > 1.0
        if kind == "walk":
            # A random walk moves by small steps, never jumps across its range.
            assert np.abs(np.diff(v, axis=0)).max() < 40
        if kind == "count":
            assert v.min() >= 0 and np.array_equal(v, np.round(v))
            assert len(np.unique(v)) > 10
        if kind == "latency":
            assert v.min() > 0
            # Spikes: the largest latency is far above the median one.
            assert v.max() > 5 * np.median(v)
    assert np.array_equal(values / QUANTUM, np.round(values / QUANTUM))


def test_cpu_has_a_daily_cycle(make_fleet):
    fleet = make_fleet(servers=400, metrics=1, silent_fraction=0.0)
    quarter = 86_400 // 4
    # Every server's target differs by its phase; sampled a quarter-day apart, each server's
    # level moves with its own sine, so the per-server difference is far from zero on average.
    early = np.mean([fleet.step(T0 + k).values[:, 0] for k in range(60)], axis=0)
    late_fleet = make_fleet(servers=400, metrics=1, silent_fraction=0.0)
    late = np.mean(
        [late_fleet.step(T0 + quarter + k).values[:, 0] for k in range(300)][-60:], axis=0
    )
    assert np.abs(late - early).mean() > 3.0


def test_some_servers_go_silent_and_come_back(make_fleet):
    fleet = make_fleet(servers=100, silent_fraction=0.1)
    alive = np.stack([t.alive for t in _run(fleet, 300)])
    silent_sometime = ~alive.all(axis=0)
    assert 0 < silent_sometime.sum() <= 30
    for i in np.flatnonzero(silent_sometime):
        first_off = np.argmin(alive[:, i])
        assert alive[first_off:, i].any(), "a silent server must come back"
    assert set(fleet.silent_servers()) == {fleet.names[i] for i in np.flatnonzero(silent_sometime)}


def test_no_silence_when_fraction_is_zero(make_fleet):
    fleet = make_fleet(servers=50, silent_fraction=0.0)
    assert all(t.alive.all() for t in _run(fleet, 200))


def test_seconds_must_increase(make_fleet):
    fleet = make_fleet()
    fleet.step(T0)
    with pytest.raises(ValueError, match="must increase"):
        fleet.step(T0)


def test_names_follow_the_shared_rules_and_are_unique():
    names = server_names(10_000)
    assert len(set(names)) == 10_000 and all(server_name_error(n) is None for n in names)
    assert sum(n.startswith("web-") for n in names) == 4_000
    catalog = metric_catalog(2_000)
    assert len({m for m, _ in catalog}) == 2_000
    assert all(metric_name_error(m) is None for m, _ in catalog)
    assert catalog[0] == ("cpu.util", "walk")
    assert metric_catalog(3, "t1.")[0][0] == "t1.cpu.util"


def test_bad_sizes_and_prefixes_are_refused():
    with pytest.raises(ValueError, match="servers"):
        server_names(0)
    with pytest.raises(ValueError, match="metrics"):
        metric_catalog(0)
    with pytest.raises(ValueError, match="prefix"):
        metric_catalog(2, "9 bad/")
    with pytest.raises(ValueError, match="silent_fraction"):
        Fleet(3, 2, silent_fraction=1.5)


def test_samples_cover_alive_servers_only(make_fleet):
    fleet = make_fleet(servers=40, silent_fraction=0.5)
    tick = next(t for t in _run(fleet, 300) if not t.alive.all())
    samples = fleet.samples(tick)
    assert len(samples) == tick.samples == tick.alive.sum() * fleet.metrics
    dead = {fleet.names[i] for i in np.flatnonzero(~tick.alive)}
    assert dead and not dead & {s.server for s in samples}
    first = samples[0]
    i, j = fleet.names.index(first.server), fleet.metric_names.index(first.metric)
    assert first.value == tick.values[i, j] and first.ts == tick.ts
