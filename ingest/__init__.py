"""The ingest: a stateless FastAPI service that validates agent batches and publishes each
metric's samples to its own Kafka topic (see docs/ingest.md for the contract). ``app.py``
assembles the service from ``routes/`` (``samples.py`` takes the samples, ``health.py`` the
probes and /metrics) and ``deps.py`` (its Annotated dependencies); ``body.py`` reads bounded
bodies, ``schema.py`` documents them, ``validate.py`` checks them; ``publisher.py`` and
``linger.py`` write records to Kafka; ``auth.py`` checks API keys; ``errors.py`` answers in
the one error shape; ``telemetry.py`` is its own metrics; ``settings.py`` and ``cli.py``
(``apm ingest``) are its edges."""
