"""StatsD / DogStatsD: line parsing, per-second aggregation, the UDP listener."""

from agent.statsd.aggregate import StatsdAggregator
from agent.statsd.listener import StatsdListener
from agent.statsd.parse import MalformedLine, parse_line

__all__ = ["MalformedLine", "StatsdAggregator", "StatsdListener", "parse_line"]
