"""The shared contract: what crosses stages, and nothing that runs a stage.

- ``model.py``: the sample, metric and server naming rules, topics and partitions per topic;
- ``wire.py``: the Kafka record encoding; ``kafka.py``: Kafka clients from one bootstrap
  string, the platform's topic spec and end offsets; ``kafka_tls.py``: the TLS every Kafka
  client (and Spark's Kafka source) reaches the brokers with, from the settings;
- ``query.py``: the query language, the stored query, the window result (its model
  ``query_model.py`` and tokens ``query_tokens.py``, re-exported by it);
  ``functions.py``: the one catalogue of query functions;
  ``query_state.py``: what a query waits for and which job covers it;
- ``errors.py``: the one error shape of both HTTP APIs; ``retry.py``: the one retry helper;
  ``telemetry.py``: a service's own metrics registry and its /metrics endpoint;
- ``settings.py``: how every service's settings resolve (its own variable, the shared one,
  the default); ``tls.py``: a server TLS context whose certificate and key are reloaded
  when their files change (on the same context, so open connections stay), and the checks
  and context of TLS clients;
- ``audit.py``: what records a change for the audit log, and the kinds of object it names;
- ``cli.py``: the ``apm`` command's dispatcher, which names each component's CLI.

Also: ``labels.py``, the one rule that makes labels, tags and attributes into metric names;
``tags.py``, the rule host tags follow and the compacted topic that carries each server's;
``query_glob.py``, server and tag-value globs and the regexes they compile to;
``query_tags.py``, the host-tag parts of a query (``key:glob``, ``BY`` keys);
``query_select.py``, which servers a query selects and in which group, from a server's name
and tags; ``ranking.py``, the top-N of one window of a ``BY server ... TOP n BY f`` query;
``agentversion.py``, the agent's version as a metric value; ``tiers.py``, the rollup tiers a
query has and a window's partial, ``tier_choice.py`` which of them a read shows (the
coarsest that still fills its points), and ``loghist.py``, the mergeable histogram a partial
keeps of its percentiles.

It imports no component (tests/test_architecture.py).
"""
