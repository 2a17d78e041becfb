"""The load generator: a synthetic fleet of up to 10,000 servers for load tests and end-to-end
truth. ``fleet.py`` generates seeded, exactly summable samples
and ``tags.py`` its servers' seeded role, dc and env tags; ``payload.py`` encodes them in
the ingest contract and ``http_sink.py`` sends them (``kafka_sink.py`` writes straight to
Kafka instead), with ``inflight.py`` bounding the work in flight; ``runner.py`` paces it all
and ``stats.py`` counts; ``truth.py`` computes the exact aggregates a query should get and
``check.py`` compares them with storage; ``capacity.py`` is the capacity model;
``settings.py`` and ``cli.py`` (``apm loadgen``) are its edges."""
