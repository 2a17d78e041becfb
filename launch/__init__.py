"""Runs the platform on one machine: the local engines and the platform's own processes.

- ``stack/``: Kafka (KRaft) and Cassandra from Maven-resolved jars, and the Spark Kafka
  connector's jars (``apm stack fetch|up|down|status``).
- ``processes.py``: the one table of the platform's processes (ingest, aggregator, dashboard,
  agent, load generator): their ``apm`` command lines, markers and health URLs.
- ``run.py``: ``apm run`` / ``make run``, which starts the engines and then that table.
- ``supervisor.py``: pid files, logs, health waits and stops for any background process.
- ``probe.py``: ``http_ok`` and ``free_port``.
- ``restarts.py``: ``apm run``'s restart policy for a component found dead.
- ``alertmanager.py``: Debian's Alertmanager for ``make run``; ``prometheus.py``: Debian's
  Prometheus as a peer of the platform (its config, process and raw samples).
- ``cluster/``: the multi-node cluster on one machine (``apm cluster up|down|status``).

No product package imports this one, except that a component's CLI may start itself through
it (``apm aggregator run`` takes the Kafka connector's jars from the local cache).
"""
