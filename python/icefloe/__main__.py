"""``python -m icefloe``: the same as the ``icefloe`` command (and ``python -m icefloe.cli``)."""

from icefloe.cli.app import main

main()
