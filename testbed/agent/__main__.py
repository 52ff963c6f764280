"""``python -m testbed.agent NAME``: run the supervisor of testbed NAME (``up`` starts it so)."""

import sys

from testbed.agent.supervisor import main

sys.exit(main(sys.argv[1:]))
