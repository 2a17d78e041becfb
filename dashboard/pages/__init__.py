"""The dashboard's pages: each module has ``layout(ctx, ...)`` and ``register(app, ctx)``.

The queries page (``queries.py``), the chart page (``chart.py``, its alert events in
``chart_alerts.py``), the health page (``health.py``, with ``health_agents.py`` and
``health_receivers.py`` its agents and receivers cards) and the alerts page (``alerts.py``, with
the rule builder ``alert_builder.py`` and its fields ``alert_builder_fields.py``, its Edit
``alert_edit.py`` and the silence form ``alert_silences.py``), and the admins' users page
(``people.py``: users and API tokens); ``common.py`` holds what every page uses. The others
are named in the dashboard's map."""
