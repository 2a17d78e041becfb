"""StatsD / DogStatsD: line parsing, per-second aggregation, the UDP listener.

``parse.py`` reads the lines, ``aggregate.py`` folds each second, ``listener.py`` is the UDP
thread."""

from agent.statsd.aggregate import StatsdAggregator
from agent.statsd.listener import StatsdListener
from agent.statsd.parse import MalformedLine, parse_line

__all__ = ["MalformedLine", "StatsdAggregator", "StatsdListener", "parse_line"]
