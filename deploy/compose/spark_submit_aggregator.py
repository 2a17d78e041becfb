"""The application file that ``spark-submit`` runs on the Spark standalone cluster: the same
``apm aggregator run`` as on a laptop, with its arguments passed through.

    spark-submit --master spark://spark-master:7077 \\
        deploy/compose/spark_submit_aggregator.py --shard 0/2
"""

from __future__ import annotations

import sys

from apm.cli import main

if __name__ == "__main__":
    sys.exit(main(["aggregator", "run", *sys.argv[1:]]))
