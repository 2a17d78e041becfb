"""The benchmarks, apart from the product code (``make bench-*``; ``python -m bench.<name>``).

- ``base.py``: what every benchmark shares: progress lines on stderr, the one percentile,
  and writing its own section of ``docs/BENCHMARKS.md`` with the exact command that produced
  it.
- one module per benchmark: ``agent``, ``ingest``, ``storage``, ``aggregator`` (and
  ``aggregator_breadth``, its many-topics configuration), ``dashboard``, ``pipeline``
  (the whole chain, driven through ``stage.py``).
- ``feed.py``: how the aggregator benchmarks fill Kafka from the one synthetic fleet
  (``loadgen.fleet``).
- ``screenshots.py``: not a benchmark; the README's screenshots, taken with the same headless
  Chromium as the dashboard benchmark.
- more benchmarks: ``agent_deb`` (the packaged agent), ``ingest_decode`` (bounding protobuf
  bodies), ``ingest_tags`` (what host tags cost the ingest), ``loadgen``,
  ``storage_servers`` and ``storage_sizes`` (per-server tables),
  ``dashboard_panels`` and ``dashboard_servers``, ``alerting`` (with ``alerting_load``, its
  load, ``alerting_cost`` and ``alerting_servers``), ``aggregator_order``,
  ``aggregator_fixed`` and ``aggregator_profile`` (the JVM operator, run by ``jvm_bench``),
  ``aggregator_by_server`` (issue, by-server and by-server-all into one section) and
  ``server_writes`` (the executors' writer of per-server results alone),
  ``floor`` (Spark's own floor) and ``faults`` (the cluster tier's fault table).
- ``process_sample.py``: what the agent benchmarks share; ``browser.py``: the one headless
  Chromium.

Not shipped in the wheel: it needs a checkout, the engines and a browser.
"""
