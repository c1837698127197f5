"""Paging of the server's lists: a ``pageToken`` is the key of the last item sent."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from icefloe.exceptions import ValidationError

__all__ = ["DEFAULT_PAGE_SIZE", "page"]

DEFAULT_PAGE_SIZE = 1000


def page(
    items: list[Any], key: Callable[[Any], list[str]], query: Mapping[str, str]
) -> tuple[list[Any], str | None]:
    """One page of sorted ``items`` after ``pageToken`` (the key of the last item sent, a list
    of strings); without a ``pageToken`` (not even an empty one) every item, as the spec asks."""
    size_raw = query.get("pageSize")
    try:
        size = int(size_raw) if size_raw else DEFAULT_PAGE_SIZE
    except ValueError:
        raise ValidationError(f"pageSize must be a positive integer, got {size_raw!r}") from None
    if size < 1:
        raise ValidationError(f"pageSize must be a positive integer, got {size}")
    token = query.get("pageToken")
    if token is None:
        return items, None
    start = 0
    if token:
        try:
            after = json.loads(base64.urlsafe_b64decode(token.encode()))
        except (ValueError, RecursionError):
            raise ValidationError("invalid pageToken") from None
        if not isinstance(after, list) or not all(isinstance(v, str) for v in after):
            raise ValidationError("invalid pageToken")
        start = next((i for i, item in enumerate(items) if key(item) > after), len(items))
    chunk = items[start : start + size]
    more = start + size < len(items)
    next_token = (
        base64.urlsafe_b64encode(json.dumps(key(chunk[-1])).encode()).decode()
        if more and chunk
        else None
    )
    return chunk, next_token
