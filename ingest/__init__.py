"""The ingest: a stateless FastAPI service that validates agent batches and publishes each
metric's samples to its own Kafka topic (see docs/ingest.md for the contract). ``app.py``
assembles the service from ``routes/`` (``samples.py`` takes the samples, ``health.py`` the
probes and /metrics, ``otlp.py`` and ``remote_write.py`` the ecosystem's protocols, decoded by
``interop/``) and ``deps.py`` (its Annotated dependencies); ``intake.py`` is the one request
path every POST takes (admission, deadline, parse thread, publish); ``body.py`` reads bounded
bodies, ``schema.py`` documents them, ``validate.py`` checks them; ``publisher.py`` and
``linger.py`` write records to Kafka; ``auth.py`` checks API keys; ``errors.py`` answers in
the one error shape; ``telemetry.py`` is its own metrics; ``settings.py`` and ``cli.py``
(``apm ingest``) are its edges.
Beside them: ``records.py`` makes a validated batch into Kafka records; ``topics.py`` guards
and creates new metric topics off the request path, with ``namecache.py`` (names that passed
the rules, bounded); ``readiness.py`` is the cached Kafka reachability /readyz tells;
``tags.py`` publishes each server's host tags to their compacted topic when they change."""
