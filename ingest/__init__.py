"""The ingest: a stateless FastAPI service that validates agent batches and publishes each
metric's samples to its own Kafka topic (see docs/ingest.md for the contract)."""
