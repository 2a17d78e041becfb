"""The local engines (Kafka in KRaft mode, Cassandra 5, Spark's Kafka connector), run from jars
that Maven resolves, for development, tests and `make run`.

``config.py`` says where the stack lives and its ports (``APM_STACK_``); ``jars.py`` resolves
the jars; ``services.py`` says what each engine is, ``tls.py`` what it adds when the stack is
given a certificate (client TLS on Kafka and Cassandra); ``control.py`` runs them as one unit and
``cli.py`` is ``apm stack``."""
