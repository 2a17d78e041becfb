"""The local engines (Kafka in KRaft mode, Cassandra 5, Spark's Kafka connector), run from jars
that Maven resolves, for development, tests and `make run`."""
