"""The multi-node cluster on one machine: ``apm cluster up|down|status`` (launch.cluster.control),
laid out by launch.cluster.layout.

``layout.py`` is the layout (env prefix ``APM_CLUSTER_``); ``node.py`` one engine node;
``kafka.py``, ``cassandra.py`` and ``spark.py`` the engines' nodes, ``nginx.py`` the load
balancer, ``platform.py`` the platform's own processes on them; ``control.py`` runs it all as
a unit and ``cli.py`` is its command.

``hosts.py`` makes hosts on this machine (a network namespace each, on one bridge, with
link-local addresses and one hosts file) and ``faults.py`` cuts them apart and heals them: the
first layer of the tier on separate hosts (docs/deploy.md, "Hosts on this machine"), which
``apm cluster up`` does not use yet."""
