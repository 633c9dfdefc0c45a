"""``python -m bnstudy.audit ...``: the same as ``bnstudy audit ...``."""

import sys

from .cli import main

sys.exit(main(["audit", *sys.argv[1:]]))
