"""The results store on Cassandra: stored queries, window results, job status and the metrics
and servers seen. ``repository.py`` is the one door the aggregator, the dashboard and the CLI
use; ``schema.py`` creates and migrates the tables, ``statements.py`` prepares every CQL
statement, ``codec.py`` converts rows to and from the contract's types, ``reader.py`` reads a
time range across day buckets, ``driver.py`` configures the Cassandra driver; ``settings.py``
(``APM_STORAGE_``) and ``cli.py`` (``apm storage``, ``apm query``) are its edges.
``alerts.py`` holds the alerting tables; ``dashboards.py`` the saved dashboards and their
share links; ``lease.py`` a lease (one holder at a time, by LWT)."""
