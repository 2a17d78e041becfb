"""The agent: one per server, it collects the host's metrics and its applications' StatsD
metrics every second and pushes them to the ingest. ``collectors/`` reads the host through
psutil (one collector per area, named in a registry); ``statsd/`` parses, aggregates and
listens for StatsD/DogStatsD lines; ``runner.py`` ticks each second and hands snapshots to
``push.py``, which sends them with backoff through ``http.py`` (over https:// with
``tls.py``'s client context: ``tls_ca``, a client certificate) and keeps what it cannot send in
the disk ``spool.py``; ``stats.py`` and ``exposition.py`` are its own telemetry on /metrics;
``settings.py`` (with ``configfiles.py``: the TOML file and its ``agent.d/`` fragments),
``install.py`` (systemd unit and config), ``once.py`` (a single push), ``version.py``,
``cli.py`` (``apm agent``) and ``main.py`` (``apm-agent``, ``python -m agent``: the command
of the Debian package, deploy/deb/) are its edges.
Beside them: ``answers.py`` reads the ingest's answers for the pusher; ``cardinality.py``
guards against metric names that grow without bound; ``rejected.py`` is the bounded set-aside
file of snapshots the ingest refused for good; ``sdnotify.py`` speaks systemd's notify
protocol; ``tags.py`` makes the host tags every snapshot carries (the user's and its own)."""
