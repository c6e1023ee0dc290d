"""`python -m biaslens ...`: see biaslens.cli."""

import sys

from biaslens.cli import main

sys.exit(main())
