"""``table.manage_snapshots()``: branches, tags, retention, fast-forward, rollback and setting
the current snapshot, on snapshots PyIceberg 0.12 writes; PyIceberg reads the result back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.schema import Schema
from icefloe.table import Table
from support.evolution import SIMPLE_SCHEMA, Catalogs, append_rows, shared_catalogs


def _setup(tmp_path: Path, n: int = 3) -> tuple[Catalogs, Table, list[int]]:
    c = shared_catalogs(tmp_path)
    c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    ids = [append_rows(c, "t", [i]) for i in range(n)]
    return c, c.ours.load_table("db.t"), ids


def _rows(c: Catalogs, ref: str | None = None, snapshot_id: int | None = None) -> list[int]:
    t = c.theirs.load_table("db.t")
    if ref is not None:
        snapshot_id = t.metadata.refs[ref].snapshot_id
    scan = t.scan(snapshot_id=snapshot_id)
    return sorted(scan.to_arrow().column("id").to_pylist())


def test_branches_and_tags_with_retention(tmp_path: Path) -> None:
    c, t, (s1, s2, s3) = _setup(tmp_path)
    with t.manage_snapshots() as ms:
        ms.create_branch("audit", s2, min_snapshots_to_keep=2, max_snapshot_age_ms=60_000)
        ms.create_tag("v1", s1, max_ref_age_ms=86_400_000)
        ms.create_branch("head")  # the current snapshot
    refs = t.refs()
    assert refs["audit"].snapshot_id == s2 and refs["audit"].min_snapshots_to_keep == 2
    assert refs["audit"].max_snapshot_age_ms == 60_000 and refs["audit"].is_branch
    assert refs["v1"].ref_type == "tag" and refs["v1"].max_ref_age_ms == 86_400_000
    assert refs["head"].snapshot_id == s3
    # PyIceberg sees the same refs, retention included
    theirs = c.theirs.load_table("db.t").metadata.refs
    assert theirs["audit"].min_snapshots_to_keep == 2
    assert theirs["audit"].max_snapshot_age_ms == 60_000
    assert theirs["v1"].snapshot_ref_type.value == "tag"
    assert _rows(c, "v1") == [0] and _rows(c, "audit") == [0, 1]

    with t.manage_snapshots() as ms:
        ms.replace_tag("v1", s2)
        ms.replace_branch("audit", s1)
        ms.set_branch_retention("audit", min_snapshots_to_keep=5)
        ms.rename_branch("head", "head2")
    refs = t.refs()
    assert refs["v1"].snapshot_id == s2 and refs["v1"].max_ref_age_ms == 86_400_000
    assert refs["audit"].snapshot_id == s1 and refs["audit"].min_snapshots_to_keep == 5
    assert refs["audit"].max_snapshot_age_ms == 60_000
    assert "head" not in refs and refs["head2"].snapshot_id == s3

    with t.manage_snapshots() as ms:
        ms.remove_tag("v1").remove_branch("audit").remove_branch("head2")
    assert set(t.refs()) == {"main"}
    assert set(c.theirs.load_table("db.t").metadata.refs) == {"main"}


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (lambda ms, s: ms.create_branch("main", s[0]), "a ref with that name exists"),
        (lambda ms, s: ms.create_tag("x", 12345), "cannot find snapshot 12345"),
        (lambda ms, s: ms.remove_branch("main"), "cannot remove the main branch"),
        (lambda ms, s: ms.remove_tag("main"), "is a branch, not a tag"),
        (lambda ms, s: ms.remove_branch("nope"), "branch 'nope' does not exist"),
        (lambda ms, s: ms.rename_branch("main", "x"), "cannot rename the main branch"),
        (lambda ms, s: ms.create_branch("b", s[0], min_snapshots_to_keep=0), "positive"),
        (lambda ms, s: ms.create_tag("t", s[0], max_ref_age_ms=-1), "positive"),
        (lambda ms, s: ms.set_branch_retention("main", max_ref_age_ms=5), "never expires"),
        (lambda ms, s: ms.rollback_to(99), "cannot find snapshot 99"),
        (lambda ms, s: ms.rollback_to_time(0), "no snapshot of main is older than 0"),
    ],
)
def test_invalid_ref_changes(action, match: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, t, ids = _setup(tmp_path, 1)
    before = t.metadata_location
    with pytest.raises(ValidationError, match=match), t.manage_snapshots() as ms:
        action(ms, ids)
    assert t.refresh().metadata_location == before


def test_an_unknown_snapshot_is_named_with_the_table_not_its_repr(tmp_path: Path) -> None:
    _, t, ids = _setup(tmp_path, 1)
    actions = [
        lambda ms: ms.rollback_to(12345),
        lambda ms: ms.create_tag("x", 12345),
        lambda ms: ms.create_branch("b", 12345),
        lambda ms: ms.set_current_snapshot(12345),
        lambda ms: ms.cherry_pick(12345),
    ]
    for action in actions:
        with pytest.raises(ValidationError) as info:
            action(t.manage_snapshots()).commit()
        assert str(info.value) == "cannot find snapshot 12345 in table db.t"
    assert t.current_snapshot().snapshot_id == ids[0]  # type: ignore[union-attr]


def test_rollback_and_set_current(tmp_path: Path) -> None:
    c, t, (s1, s2, s3) = _setup(tmp_path)
    with t.manage_snapshots() as ms:
        ms.rollback_to(s1)
    assert t.current_snapshot().snapshot_id == s1  # type: ignore[union-attr]
    assert _rows(c) == [0]
    assert [e.snapshot_id for e in t.history()] == [s1, s2, s3, s1]
    # s3 is no longer an ancestor: rolling back to it is refused, setting it is allowed
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.manage_snapshots().rollback_to(s3)
    with t.manage_snapshots() as ms:
        ms.set_current_snapshot(s3)
    assert _rows(c) == [0, 1, 2]
    ts2 = t.snapshot_by_id(s2).timestamp_ms  # type: ignore[union-attr]
    ts3 = t.snapshot_by_id(s3).timestamp_ms  # type: ignore[union-attr]
    with t.manage_snapshots() as ms:
        ms.rollback_to_time(ts3)  # strictly older than s3: s2 (or s1 if they share a ms)
    expected = s2 if ts2 < ts3 else s1
    assert t.current_snapshot().snapshot_id == expected  # type: ignore[union-attr]
    assert t.snapshot_as_of(t.history()[-1].timestamp_ms).snapshot_id == expected


def test_fast_forward(tmp_path: Path) -> None:
    c, t, (s1,) = _setup(tmp_path, 1)
    with t.manage_snapshots() as ms:
        ms.create_branch("dev", s1)
    b1 = append_rows(c, "t", [10], branch="dev")
    b2 = append_rows(c, "t", [11], branch="dev")
    t.refresh()
    assert t.current_snapshot().snapshot_id == s1  # type: ignore[union-attr]
    with t.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")
    assert t.current_snapshot().snapshot_id == b2 and b1 != b2  # type: ignore[union-attr]
    assert _rows(c) == [0, 10, 11]
    with t.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")  # already there: nothing to do
    # diverged: main gets its own snapshot, dev is no longer ahead of it
    append_rows(c, "t", [20])
    t.refresh()
    with pytest.raises(ValidationError, match="is not an ancestor"):
        t.manage_snapshots().fast_forward("main", "dev")
    with pytest.raises(ValidationError, match="ref 'zzz' does not exist"):
        t.manage_snapshots().fast_forward("main", "zzz")


def test_ref_changes_in_one_transaction(tmp_path: Path) -> None:
    _, t, (s1, s2) = _setup(tmp_path, 2)
    log = len(t.metadata_log())
    with t.transaction() as tx:
        ms = tx.manage_snapshots()
        ms.create_tag("a", s1).create_branch("b", s2)
        ms.rollback_to(s1)
        ms.commit()
        tx.set_properties(note="refs")
    assert len(t.metadata_log()) == log + 1
    assert t.refs()["a"].snapshot_id == s1 and t.current_snapshot().snapshot_id == s1  # type: ignore[union-attr]


def test_concurrent_ref_move_is_a_conflict(tmp_path: Path) -> None:
    c, t, (s1, s2) = _setup(tmp_path, 2)
    stale = c.ours.load_table("db.t")
    with t.manage_snapshots() as ms:
        ms.rollback_to(s1)
    with pytest.raises(CommitConflictError), stale.manage_snapshots() as ms:
        ms.create_tag("late", s2).set_current_snapshot(s2)
    # a ref nobody else touched commits fine from a stale table (retried)
    stale2 = c.ours.load_table("db.t")
    append_rows(c, "t", [5])
    with stale2.manage_snapshots() as ms:
        ms.create_tag("ok", s2)
    assert stale2.refs()["ok"].snapshot_id == s2
    assert stale2.current_snapshot().snapshot_id not in (s1, s2)  # type: ignore[union-attr]


def test_fast_forward_creates_a_missing_branch(tmp_path: Path) -> None:
    # branch-based write-audit-publish on a new table: the rows go to "audit", then main is
    # created at its head (Java's fast_forward does the same)
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    import pyarrow as pa

    t.append(pa.table({"id": pa.array([1], pa.int64()), "data": ["r1"]}), branch="audit")
    audit = t.refs()["audit"].snapshot_id
    assert t.current_snapshot() is None
    with t.manage_snapshots() as ms:
        ms.fast_forward("main", "audit")
    assert t.current_snapshot().snapshot_id == audit  # type: ignore[union-attr]
    assert _rows(c) == [1]


def test_times_and_ids_of_the_wrong_type_are_validation_errors(tmp_path: Path) -> None:
    import datetime as dt

    _, t, (s1, s2, _) = _setup(tmp_path)
    ts2 = t.snapshot_by_id(s2).timestamp_ms  # type: ignore[union-attr]
    when = dt.datetime.fromtimestamp(ts2 / 1000, dt.timezone.utc)
    assert t.metadata.snapshot_as_of(when).snapshot_id == s2  # datetimes are accepted
    bad: list[object] = ["x", 1.5, True]
    for value in bad:
        with pytest.raises(ValidationError):
            t.metadata.snapshot_as_of(value)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            t.manage_snapshots().rollback_to_time(value)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            t.scan(snapshot_id=value).to_arrow()  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            t.expire_snapshots(older_than_ms=value)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            t.expire_snapshots(retain_last=value)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="is an integer"):
        t.manage_snapshots().create_tag("v1", str(s1))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="non-empty"):
        t.manage_snapshots().create_tag("", s1)
    with t.manage_snapshots() as ms:
        ms.rollback_to_time(when + dt.timedelta(milliseconds=1))
    assert t.current_snapshot().snapshot_id == s2  # type: ignore[union-attr]
    result = t.expire_snapshots(older_than_ms=dt.datetime.now(dt.timezone.utc), retain_last=1)
    assert s1 in result.snapshot_ids
    # unhashable ids and names raised a bare TypeError from the lookups
    with pytest.raises(ValidationError, match="must be an integer"):
        t.scan().with_snapshot([s2])  # type: ignore[arg-type]
    t.manage_snapshots().create_branch("b", s2).commit()
    for change in (
        lambda ms: ms.remove_branch(["b"]),
        lambda ms: ms.rename_branch("b", ["x"]),
        lambda ms: ms.create_tag(["x"], s2),
        lambda ms: ms.fast_forward("b", ["main"]),
    ):
        with pytest.raises(ValidationError, match="a ref name is"):
            change(t.manage_snapshots())


def test_a_branch_of_a_table_without_snapshots_starts_at_an_empty_snapshot(
    tmp_path: Path,
) -> None:
    """As in Iceberg Java: the branch gets an empty ``append`` snapshot of its own, main stays
    without one, and PyIceberg appends to the branch and reads it."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    with t.manage_snapshots() as ms:
        ms.create_branch("audit", max_ref_age_ms=86_400_000)
    ref = t.refs()["audit"]
    assert ref.is_branch and ref.max_ref_age_ms == 86_400_000
    assert t.current_snapshot() is None
    empty = t.metadata.snapshot(ref.snapshot_id)
    assert empty.summary.operation == "append" and empty.summary.get("total-records") == "0"
    assert t.scan(ref="audit").to_arrow().num_rows == 0
    append_rows(c, "t", [1, 2], branch="audit")
    assert _rows(c, ref="audit") == [1, 2]
    assert c.ours.load_table("db.t").current_snapshot() is None


def test_a_stale_writer_keeps_ref_changes_made_meanwhile(tmp_path: Path) -> None:
    """A table object loaded before another writer raised a branch's retention, or turned a
    branch into a tag at the same snapshot, wrote to it: the append committed with the old
    settings (retention back to 5, which a later expiry acts on) and turned the tag back into a
    moved branch. The write is rebuilt on the new state: the retention stays, a tag refuses."""
    c, admin, _ = _setup(tmp_path, 1)
    with admin.manage_snapshots() as ms:
        ms.create_branch("b", min_snapshots_to_keep=5)
        ms.create_branch("release")
    writer, writer2 = c.ours.load_table("db.t"), c.ours.load_table("db.t")
    frozen = admin.current_snapshot().snapshot_id
    with admin.manage_snapshots() as ms:
        ms.set_branch_retention("b", min_snapshots_to_keep=50)
        ms.remove_branch("release")
        ms.create_tag("release", frozen)
    rows = pa.table({"id": pa.array([7], pa.int64()), "data": ["r7"]})
    writer.append(rows, branch="b")
    with pytest.raises(ValidationError, match="it is a tag"):
        writer2.append(rows, branch="release")
    refs = c.ours.load_table("db.t").refs()
    assert refs["b"].min_snapshots_to_keep == 50 and refs["b"].is_branch
    assert refs["release"].ref_type == "tag" and refs["release"].snapshot_id == frozen
    assert _rows(c, "b") == [0, 7]
