"""`python -m harness.cli ...`: the `batchmark` command."""

import sys

from harness.cli import main

sys.exit(main())
