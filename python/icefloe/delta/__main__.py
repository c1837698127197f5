"""``python -m icefloe.delta``: see :mod:`icefloe.delta.cli`."""

import sys

from icefloe.delta.cli import main

sys.exit(main())
