"""`python -m biaslens ...`: see biaslens.cli."""

import sys

from .cli import main

sys.exit(main())
