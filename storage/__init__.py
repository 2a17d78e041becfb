"""The results store on Cassandra: stored queries, window results, job status and the metrics and
servers seen. ``repository.py`` is the one door the aggregator, the dashboard and the CLI use;
``schema.py`` creates and migrates the tables, ``statements.py`` prepares the results' CQL
statements, ``codec.py`` converts rows to and from the contract's types, ``reader.py`` reads a
time range across day buckets, ``driver.py`` configures the Cassandra driver and runs bulk
writes; ``settings.py`` (``APM_STORAGE_``) and ``cli.py`` (``apm storage``, ``apm query``) are
its edges. ``server_tables.py`` (their DDL), ``servers.py`` and ``rankings.py`` hold the
per-server series of ``BY server`` queries and their top-N rankings. ``tier_tables.py``
(their DDL) and ``tiers.py`` hold the rollup tiers: each window's partial and the 1 min and
1 h rows. ``alerts.py`` holds the
alerting tables; ``dashboards.py`` the saved dashboards and their share links; ``users.py`` the
dashboard's users and ``tokens.py`` their API tokens; ``audit.py`` the audit log of their changes
and of every other change, ``audit_log.py`` what records them; ``lease.py`` a lease (one holder at a
time, by LWT). ``errors.py`` is the one place that says which Cassandra failures are worth
retrying and which mean the database is unavailable. Client TLS to the nodes is in
``settings.py`` (its context for the Python driver, its files for the executors' writer)."""
