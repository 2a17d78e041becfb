"""``python -m agent``: the ``apm-agent`` command (agent.main)."""

import sys

from agent.main import main

sys.exit(main())
