"""`python -m needle_retrieval.cli ...`: the `needle` command run by the interpreter it is given."""

import sys

from needle_retrieval.cli.commands import main

sys.exit(main())
