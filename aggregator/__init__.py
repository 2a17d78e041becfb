"""The aggregator: a Spark Structured Streaming job that evaluates the stored queries over the
metric topics in event-time windows and writes each window's result to storage. ``job.py``
runs the control loop (which queries are active, which topics to read, status); ``streams.py``
builds the stream from ``plan.py`` (Kafka records to samples to window summaries): the
records are decoded by the JVM code that ``records.py`` calls, and dedup and fan-out to
queries is the JVM operator that ``partials.py`` calls (their Java source and Maven build are
in ``jvm/``); ``rollup.py`` writes each batch's fleet windows' partials and rolls them
up into the 1 min and 1 h tiers; ``seen.py`` gathers each server's newest sample and the
skew counts of ``skew.py`` in the same pass; ``evaluate.py`` and ``quantiles.py`` turn
summaries into results; ``server_writes.py`` has the executors write the per-server rows
of ``BY server`` queries and their rankings (``series.py`` names those series);
``joining.py`` and ``lag.py`` handle topics that join and consumer lag;
``recovery.py`` restarts a stopped stream and ``retrying.py`` retries storage calls;
``session.py`` builds the SparkSession; ``store.py`` is what it needs from storage;
``progress.py`` and ``telemetry.py`` are its own figures; ``settings.py``, ``status.py`` and
``cli.py`` (``apm aggregator``) are its edges. ``series.py`` names a window summary's series
(the query's one, or one server's of a ``BY server`` query, or one group's of a ``BY <tag>``
query); ``tags_feed.py`` follows the host-tags topic into ``tag_map.py``'s map, which the
operator reads each batch, by the rule of which version of a server's tags a window uses."""
