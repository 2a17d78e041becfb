"""The multi-node cluster on one machine: ``apm cluster up|down|status`` (launch.cluster.control),
laid out by launch.cluster.layout.

``layout.py`` is the layout (env prefix ``APM_CLUSTER_``); ``node.py`` one engine node;
``kafka.py``, ``cassandra.py`` and ``spark.py`` the engines' nodes, ``nginx.py`` the load
balancer, ``platform.py`` the platform's own processes on them; ``control.py`` runs it all as
a unit and ``cli.py`` is its command."""
