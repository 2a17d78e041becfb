"""Alerting: rules on stored queries that page people (see docs/alerting.md).

- ``rules.py``: a rule and its validation; ``template.py``: the bounded annotation template;
  ``silences.py``: silences (rule, labels, server glob, start-end, weekly window).
- ``machine.py``: the pure state machine (normal, pending, firing, recovering, nodata, error),
  folded over completed windows in event time.
"""
