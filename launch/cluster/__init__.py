"""The multi-node cluster on one machine: ``apm cluster up|down|status`` (launch.cluster.control),
laid out by launch.cluster.layout."""
