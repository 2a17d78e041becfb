"""The dashboard: a Plotly Dash app on a Flask server to define queries, watch their charts and the
platform's health, with a REST API for automation. ``app.py`` assembles it; ``pages/`` holds the
queries, chart, health and alerts pages (the alerts page's rule builder, its Edit and the
silence form, the chart's alert events and the health page's receivers card each in a module of
their own) and the dashboards pages (``board_list.py``, ``board.py``, ``board_edit.py`` its
edits, ``board_panels.py`` the panels' figures, ``board_tables.py`` the stat and table panels),
``figures.py`` the line charts of the chart page and the panels (``traces.py`` how their
lines look and what their hover says), ``query_builder.py`` the queries page's builder;
``per_server.py`` which servers of a ``BY server`` query are shown and why; ``boards.py`` the
saved dashboards' model and its one validator, ``board_book.py`` their service,
``board_examples.py`` the example ``apm run`` creates, ``dashboards_api.py`` their REST API
and ``share.py`` the signed-out read-only view of a share link; ``api.py`` the REST API,
``alerts_api.py`` the alerting one (``alerts_preview.py`` its rule preview,
``alerts_openapi.py`` its description); ``promapi/`` the Prometheus-compatible read API;
``auth.py`` login, tokens and CSRF, with ``login.py`` (the sign-in page and ``/login``),
``sessions.py`` (signed-cookie sessions),
``throttle.py`` (login throttling) and ``next_url.py`` (where a login may redirect);
``signin.py`` who a password or session is and with which role, over ``users.py`` (the users of
``apm user``, ``user_cli.py``) and ``api_tokens.py`` (their API tokens, ``apm token``:
``token_cli.py``; ``cli_runner.py`` what the user, token and audit commands share: the
connection and the exit codes); ``auth_proxy.py`` single sign-on behind an authenticating
proxy, whose header ``proxy_trust.py`` decides whom to believe from; ``audit.py`` who changes
what for the audit log (``storage.audit_log`` records it), ``audit_read.py`` reads it for
``audit_api.py`` (``GET /api/audit``) and ``audit_cli.py`` (``apm audit``); ``roles.py`` the
one table of who may call what, enforced by ``permits.py``;
``validation.py`` the one path for query text; ``states.py`` why a query shows what it shows;
``guard.py`` one storage call guarded (``storage.errors`` says which failures mean "storage
unavailable"); ``tiered.py`` reads a fleet chart at the coarsest rollup tier its range fits;
``series.py``, ``downsample.py`` and ``cache.py`` turn stored windows into chart series;
``health.py``, ``sources.py`` and ``agents.py`` read Kafka, the ingest's /metrics and the
agents' versions; ``ports.py`` and ``context.py`` are what pages share; ``telemetry.py`` its
own metrics; ``settings.py``, ``serve.py`` and ``cli.py`` (``apm dashboard``) are its edges."""
