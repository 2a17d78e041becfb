"""Alerting: rules on stored queries that page people (see docs/alerting.md).

- ``rules.py``: a rule, built from its fields validated one by one in ``fields.py``;
  ``receiver_url.py``: which receiver URLs are allowed; ``template.py``: the bounded
  annotation template; ``silences.py``: silences (rule, labels, server glob, start-end,
  weekly window).
- ``machine.py``: the pure state machine (normal, pending, firing, recovering, nodata, error),
  folded over completed windows in event time.
"""
