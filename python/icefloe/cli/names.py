"""Table, view and namespace names on the command line: dotted, with DuckDB-style quoted parts
for names that hold a dot (``db."x.y"``; ``""`` inside a quoted part is one quote).

:func:`split_name` reads a TABLE (or NAMESPACE) argument into its parts; :func:`show_name`
writes parts back the way :func:`split_name` reads them, so what ``icefloe list`` prints can be
pasted into any other command.
"""

from __future__ import annotations

from icefloe.exceptions import ValidationError

__all__ = [
    "display_name",
    "quote_part",
    "quoted_part",
    "select_list",
    "show_name",
    "split_name",
    "unquoted_text",
]


def quote_part(part: str) -> str:
    """``part`` as a quoted identifier: ``"x.y"``, ``"a""b"``."""
    return '"' + part.replace('"', '""') + '"'


#: Characters that get a part quoted: a dot or a quote (:func:`split_name` would split or
#: misread it) and a slash or a backslash (an unquoted one makes the argument a path).
_NEEDS_QUOTES = frozenset('."/\\')


def show_name(parts: tuple[str, ...] | list[str]) -> str:
    """``parts`` dotted, a part that holds a dot, a quote, a slash or a backslash quoted
    (``db."x.y"``, ``db."a/b"``), so that :func:`split_name` reads it back and the commands
    take it for a name, not a path."""
    return ".".join(quote_part(p) if _NEEDS_QUOTES.intersection(p) else p for p in parts)


def unquoted_text(text: str) -> str | None:
    """The text of dotted name ``text`` outside its quoted parts (``db."a/b"`` -> ``db.``);
    None when ``text`` has no quoted part or is not a well-formed name."""
    if '"' not in text:
        return None
    outside: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            try:
                _, i = quoted_part(text, i)
            except ValidationError:
                return None
            if i < n and text[i] != ".":
                return None
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            if '"' in text[i:j]:  # a quote inside an unquoted part: not a name
                return None
            outside.append(text[i:j])
            i = j
        if i < n:
            outside.append(".")
            i += 1
    return "".join(outside)


def display_name(obj: object) -> str:
    """The name of a table or view as the commands print it: :func:`show_name` of its
    identifier, or the metadata location of a table opened by path."""
    from icefloe.table.static import StaticTable

    if isinstance(obj, StaticTable):
        return obj.name
    return show_name(tuple(obj.identifier))  # type: ignore[attr-defined]


def quoted_part(text: str, i: int) -> tuple[str, int]:
    """The quoted part of ``text`` that opens with the quote at ``i`` (``""`` inside it is
    one quote), and the index just past its closing quote; unbalanced quotes are bad input."""
    chunks, j = [], i + 1
    while True:
        k = text.find('"', j)
        if k < 0:
            raise ValidationError(f"unbalanced quotes in the name {text!r}")
        chunks.append(text[j:k])
        if not text.startswith('""', k):
            return "".join(chunks), k + 1
        chunks.append('"')
        j = k + 2


def split_name(text: str) -> tuple[str, ...]:
    """The parts of a dotted name: split on dots outside quotes; a part that starts with a
    quote runs to its closing quote (``""`` inside it is one quote), any other part to the next
    dot, as written (``db.events`` -> ``("db", "events")``, ``db."x.y"`` -> ``("db", "x.y")``).
    An unclosed quote, or text after a closing quote other than a dot, is bad input."""
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            part, i = quoted_part(text, i)
            if i < n and text[i] != ".":
                raise ValidationError(
                    f"not a name: {text!r} (a quoted part ends at a dot or the end; write a "
                    'quote inside one as "")'
                )
            parts.append(part)
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            parts.append(text[i:j])
            i = j
        if i >= n:
            return tuple(parts)
        i += 1  # the dot


def select_list(text: str) -> tuple[str, ...]:
    """The column names of a comma-separated ``--select``: each a dotted path whose parts may
    be quoted (``"a,b"``, ``"a.b"``, ``nested."a.b"``; ``""`` inside is one quote), blanks
    around names dropped; a name without quotes is taken as written. A path comes back dotted
    (``nested.a.b``), a nested field's path or a top-level name holding dots, as
    ``scan(selected_fields=...)`` takes it."""
    names: list[str] = []
    i, n = 0, len(text)
    while i <= n:
        j = text.find(",", i)
        j = n if j < 0 else j
        if '"' not in text[i:j]:  # no quote: the name as written (``price..usd``, ``v. 2``)
            if text[i:j].strip():
                names.append(text[i:j].strip())
            i = j + 1
            continue
        parts: list[str] = []
        while True:  # the parts of one name, up to a comma or the end
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] == '"':
                part, i = quoted_part(text, i)
                while i < n and text[i].isspace():
                    i += 1
                if i < n and text[i] not in ",.":
                    raise ValidationError(
                        f"not a column list: {text!r} (a quoted part ends at a dot or a comma)"
                    )
            else:
                j = i
                while j < n and text[j] not in ",.":
                    j += 1
                part, i = text[i:j].strip(), j
            parts.append(part)
            if i < n and text[i] == ".":
                i += 1
                continue
            break
        if any(parts):
            if not all(parts):
                raise ValidationError(f"not a column list: {text!r} (an empty part in a name)")
            names.append(".".join(parts))
        i += 1  # the comma
    return tuple(names)
