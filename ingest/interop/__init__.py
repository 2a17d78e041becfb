"""The ecosystem's protocols into the ingest: Prometheus remote_write 1.0 and OpenTelemetry
OTLP/HTTP metrics, mapped onto snapshots that take the ingest's one validation and publishing
path (ingest.intake.intake). docs/interop.md has the mappings, limits and answers."""
