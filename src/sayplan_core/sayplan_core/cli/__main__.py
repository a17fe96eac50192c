"""`python -m sayplan_core.cli`: the `sayplan` command without its console script."""

import sys

from sayplan_core.cli.app import main

sys.exit(main())
