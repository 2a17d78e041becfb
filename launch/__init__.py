"""Runs the platform on one machine: the local engines and the platform's own processes.

- ``stack/``: Kafka (KRaft) and Cassandra from Maven-resolved jars, and the Spark Kafka
  connector's jars (``apm stack fetch|up|down|status``).
- ``processes.py``: the one table of the platform's processes (ingest, aggregator, dashboard,
  agent, load generator): their ``apm`` command lines, markers and health URLs.
- ``run.py``: ``apm run`` / ``make run``, which starts the engines and then that table.
- ``supervisor.py``: pid files, logs, health waits and stops for any background process.
- ``probe.py``: ``http_ok`` and ``free_port``.
- ``jvm.py``: the JVM helpers the engine launchers share (JDK check, command line, options).
- ``restarts.py``: ``apm run``'s restart policy for a component found dead.
- ``alertmanager.py``: Debian's Alertmanager for ``make run``, run by the process table itself.
- ``cluster/``: the multi-node cluster on one machine (``apm cluster up|down|status``).

This is the top floor: no product package imports it. It hands the components what they need
from the machine (the aggregator's jars through ``APM_AGGREGATOR_JARS``) and runs the peers
itself (Alertmanager). The tests' Prometheus peer lives in ``tests/support/prometheus.py``.
"""
