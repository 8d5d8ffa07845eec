"""``python -m dexter.testing.fakellm``."""

import sys

from dexter.testing.fakellm.cli import main

sys.exit(main())
