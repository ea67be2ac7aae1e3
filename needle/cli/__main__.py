"""`python -m needle.cli ...`: the `needle` command run by the interpreter it is given."""

import sys

from needle.cli.commands import main

sys.exit(main())
