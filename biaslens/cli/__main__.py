"""`python -m biaslens.cli ...`, the same as `python -m biaslens ...`."""

import sys

from biaslens.cli.main import main

sys.exit(main())
