"""The main job of the README: a short end-to-end demonstration of what icefloe does today."""

from __future__ import annotations

import icefloe


def main() -> None:
    print(f"icefloe {icefloe.__version__}: Rust core loaded ({icefloe._native.__name__})")


if __name__ == "__main__":
    main()
