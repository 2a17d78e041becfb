"""Alerting: rules on stored queries that page people (see docs/alerting.md).

- ``rules.py``: a rule, built from its fields validated one by one in ``fields.py``;
  ``receiver_url.py``: which receiver URLs are allowed; ``template.py``: the bounded
  annotation template; ``silences.py``: silences (rule, labels, server glob, start-end,
  weekly window).
- ``machine.py``: the pure state machine (normal, pending, firing, recovering, nodata, error),
  folded over completed windows in event time.
- ``evaluator.py``: one evaluation cycle; ``cycle.py``: its edges (the tables and results it is
  given, its report and phase timings); ``alerts.py``: one rule's alerts in a cycle;
  ``windows.py``: a rule's windows and their refold; ``servers.py``: one alert per server of a
  ``BY server`` query; ``persist.py``: which alert rows a cycle writes; ``presence.py``:
  server-silent and meta alerts; ``notices.py``: the notices of a state.
- ``dispatch.py``, ``senders.py``: the outbox delivered to the receivers; ``service.py``: the
  evaluator process; ``rulebook.py``: rules and silences as the API and ``cli.py`` edit them;
  ``settings.py``, ``telemetry.py``: its settings and /metrics.

``server_reads.py`` reads the per-server results of a cycle's ``BY server`` rules, one read per
window.
"""
