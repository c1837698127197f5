"""IdentityMemo: values remembered by the identity of the objects they derive from."""

from __future__ import annotations

from icefloe._identity_memo import IdentityMemo


def test_hits_only_the_same_objects_and_key() -> None:
    memo = IdentityMemo(8)
    builds: list[str] = []

    def build(tag: str) -> str:
        builds.append(tag)
        return tag

    a, b = [1], [1]  # equal, not the same object
    assert memo.get((a,), "k", lambda: build("a")) == "a"
    assert memo.get((a,), "k", lambda: build("again")) == "a"
    assert memo.get((b,), "k", lambda: build("b")) == "b"
    assert memo.get((a,), "other", lambda: build("a-other")) == "a-other"
    assert memo.get((a, b), None, lambda: build("ab")) == "ab"
    assert memo.get((b, a), None, lambda: build("ba")) == "ba"
    assert builds == ["a", "b", "a-other", "ab", "ba"]


def test_holds_at_most_size_entries_least_recently_used_out() -> None:
    memo = IdentityMemo(2)
    x, y, z = object(), object(), object()
    memo.get((x,), None, lambda: "x")
    memo.get((y,), None, lambda: "y")
    assert memo.get((x,), None, lambda: "rebuilt") == "x"  # x is now the most recent
    memo.get((z,), None, lambda: "z")  # evicts y
    assert memo.get((y,), None, lambda: "y2") == "y2"
    assert memo.get((x,), None, lambda: "x2") == "x2"  # evicted by y2 after z
