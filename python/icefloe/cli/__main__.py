"""``python -m icefloe.cli``: the same as the ``icefloe`` command."""

from icefloe.cli.app import main

main()
