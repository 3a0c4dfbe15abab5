"""`python -m fastformer ...`: the `fastformer` command, for a Python whose scripts folder is not on PATH (or a
source tree on PYTHONPATH without an install)."""

from fastformer.cli.main import console

raise SystemExit(console())
