"""The benchmarks, apart from the product code (``make bench-*``; ``python -m bench.<name>``).

- ``base.py``: what every benchmark shares: progress lines on stderr and writing its own
  section of ``docs/BENCHMARKS.md`` with the exact command that produced it.
- one module per benchmark: ``agent``, ``ingest``, ``storage``, ``aggregator`` (and
  ``aggregator_breadth``, its many-topics configuration), ``dashboard``, ``pipeline``
  (the whole chain, driven through ``stage.py``).
- ``feed.py``: how the aggregator benchmarks fill Kafka from the one synthetic fleet
  (``loadgen.fleet``).
- ``screenshots.py``: not a benchmark; the README's screenshots, taken with the same headless
  Chromium as the dashboard benchmark.

Not shipped in the wheel: it needs a checkout, the engines and a browser.
"""
