"""The ecosystem's protocols into the ingest: Prometheus remote_write 1.0 and OpenTelemetry
OTLP/HTTP metrics, mapped onto snapshots that take the ingest's one validation and publishing
path (ingest.intake.intake). docs/interop.md has the mappings, limits and answers.

``otlp.py`` decodes OTLP and ``otlp_map.py`` maps its metrics onto the model, with
``otlp_identity.py`` (a stream's identity and the digest that keys it) and ``rates.py``
(cumulative series made into rates); ``remote_write.py`` decodes remote_write, whose messages
``prompb.py`` builds from a descriptor; ``points.py`` groups mapped samples into snapshots;
``wirecount.py`` and ``parsedcount.py`` bound a body's elements before and while it is parsed;
``runtime.py`` is what both routes share in one app, ``settings.py`` their settings."""
