"""Geometry and geography values: the ``geoarrow.wkb`` Arrow extension type and bounding boxes.

Geo columns hold WKB (spec Appendix G). In Arrow they are :class:`WkbType`, an extension type
named ``geoarrow.wkb`` whose JSON metadata carries the CRS (and, for geography, the edge
algorithm); pyarrow writes such a column to Parquet with the ``GEOMETRY(crs)`` /
``GEOGRAPHY(crs, algorithm)`` logical type, which DuckDB and other readers need. CRS strings
map between Iceberg (``OGC:CRS84``, ``srid:N``, ``projjson:name``) and GeoArrow (``{"crs":
"N", "crs_type": "srid"}`` as pyarrow reads ``srid:N`` back); ``OGC:CRS84`` is Parquet's
default, so the file records it as an empty CRS. pyarrow 26 writes only the ``spherical``
edge algorithm: geography with another algorithm stays plain binary, tagged by field metadata.

:class:`BoundingBox` is the query box of the ``st_intersects`` / ``st_disjoint`` predicates
(:mod:`icefloe.expressions`); the boxes of WKB values are computed by the Rust core
(:func:`wkb_bounds`, :func:`intersects_mask`), which refuses malformed WKB with
:class:`~icefloe.exceptions.ValidationError`.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import ValidationError

__all__ = [
    "EXTENSION_NAME",
    "BoundingBox",
    "WkbType",
    "crs_from_geoarrow",
    "intersects_mask",
    "wkb_bounds",
    "wkb_type",
]

EXTENSION_NAME = "geoarrow.wkb"
DEFAULT_CRS = "OGC:CRS84"
#: The geography edge algorithms pyarrow can write as a Parquet GEOGRAPHY annotation.
WRITABLE_EDGES = frozenset({"spherical"})


class WkbType(pa.ExtensionType):  # type: ignore[misc]
    """``geoarrow.wkb``: WKB in binary (or large binary) storage, with CRS and edges."""

    def __init__(
        self, crs: str = DEFAULT_CRS, edges: str | None = None, storage: pa.DataType | None = None
    ) -> None:
        self.crs = crs
        self.edges = edges
        super().__init__(pa.binary() if storage is None else storage, EXTENSION_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        meta: dict[str, Any] = {"crs": self.crs}
        if self.edges is not None:
            meta["edges"] = self.edges
        return json.dumps(meta).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> WkbType:
        crs, edges = parse_metadata(serialized)
        return cls(crs, edges, storage_type)

    def __reduce__(self) -> Any:
        return WkbType, (self.crs, self.edges, self.storage_type)

    def _key(self) -> tuple[str, str | None]:
        return self.crs, None if self.edges == "planar" else self.edges

    def __eq__(self, other: object) -> bool:
        # pyarrow's default compares the name and storage only: two CRSs would be one type,
        # and casts, concatenations and schema merges would relabel values silently
        if not isinstance(other, pa.ExtensionType):
            return NotImplemented
        if other.extension_name != EXTENSION_NAME or other.storage_type != self.storage_type:
            return False
        if isinstance(other, WkbType):
            return self._key() == other._key()
        # another library's geoarrow.wkb type (geoarrow-pyarrow): compare its metadata
        try:
            return self._key() == parse_metadata(other.__arrow_ext_serialize__())
        except ValidationError:
            return False

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((EXTENSION_NAME, str(self.storage_type), self._key()))


def parse_metadata(raw: bytes | None) -> tuple[str, str | None]:
    """The Iceberg CRS string and edge algorithm (``None`` for planar) of GeoArrow metadata."""
    info: Any = {}
    if raw:
        try:
            info = json.loads(raw)
        except ValueError:
            raise ValidationError(f"invalid geoarrow extension metadata {raw!r}") from None
    if not isinstance(info, dict):
        info = {}
    edges = info.get("edges")
    edges = None if edges is None else str(edges).lower()  # the reference ignores case
    return crs_from_geoarrow(info.get("crs"), info.get("crs_type")), (
        None if edges in (None, "planar") else edges
    )


def crs_from_geoarrow(crs: Any, crs_type: Any = None) -> str:
    """An Iceberg CRS string from GeoArrow's ``crs`` / ``crs_type``."""
    if crs is None or crs == "":
        return DEFAULT_CRS
    if not isinstance(crs, str):
        return json.dumps(crs, separators=(",", ":"))
    if crs_type == "srid" and not crs.startswith("srid:"):
        return f"srid:{crs}"
    return crs


def _register() -> None:
    # another library (geoarrow-pyarrow) may have registered the name: its type then reads
    # the column, and icefloe still writes with its own instances, which carry the same name
    with contextlib.suppress(pa.ArrowKeyError):
        pa.register_extension_type(WkbType())


_register()


def wkb_type(crs: str, edges: str | None, large: bool = False) -> pa.DataType | None:
    """The extension type of a geo column, or ``None`` when pyarrow cannot annotate it
    (geography with an edge algorithm other than spherical)."""
    if edges is not None and edges not in WRITABLE_EDGES:
        return None
    return WkbType(crs, edges, pa.large_binary() if large else pa.binary())


def _storage(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return arr


def wkb_bounds(arr: pa.Array | pa.ChunkedArray) -> tuple[bytes, bytes] | None:
    """The lower and upper bound points (``x:y[:z][:m]``) of a WKB column, or ``None`` when
    no value has both X and Y (spec: NaN skipped per dimension, empty geometries ignored)."""
    bounds: tuple[bytes, bytes] | None = _native.geo_bounds(_storage(arr))
    return bounds


@dataclass(frozen=True)
class BoundingBox:
    """A query box: X and Y ranges, optionally Z and M ranges (closed intervals).

    ``BoundingBox(xmin, ymin, xmax, ymax)``; ``BoundingBox.of((xmin, ymin, xmax, ymax))`` also
    takes a 4-, 6- (with Z) or 8-tuple (with Z and M; a ``nan`` pair leaves one out)."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    zmin: float | None = None
    zmax: float | None = None
    mmin: float | None = None
    mmax: float | None = None

    def __post_init__(self) -> None:
        for name in ("xmin", "ymin", "xmax", "ymax", "zmin", "zmax", "mmin", "mmax"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValidationError(f"bounding box {name} must be a number, got {v!r}")
            try:
                object.__setattr__(self, name, float(v))
            except OverflowError:
                raise ValidationError(
                    f"bounding box {name} is too large for a double: bounds must be finite numbers"
                ) from None
        for dim, lo, hi in self._ranges():
            if (lo is None) != (hi is None):
                raise ValidationError(f"bounding box {dim} range needs both min and max")
            if lo is None or hi is None:
                continue
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise ValidationError(
                    f"invalid bounding box: {dim} range [{lo}, {hi}] (min must be <= max, both "
                    "finite numbers: not NaN or infinite)"
                )

    def _ranges(self) -> list[tuple[str, float | None, float | None]]:
        return [
            ("x", self.xmin, self.xmax),
            ("y", self.ymin, self.ymax),
            ("z", self.zmin, self.zmax),
            ("m", self.mmin, self.mmax),
        ]

    @staticmethod
    def of(value: Any) -> BoundingBox:
        """A box from a BoundingBox, a dict of its fields, or a 4/6/8-tuple of numbers."""
        if isinstance(value, BoundingBox):
            return value
        if isinstance(value, dict):
            try:
                return BoundingBox(**value)
            except TypeError as e:
                raise ValidationError(f"not a bounding box: {value!r} ({e})") from None
        if isinstance(value, list | tuple) and len(value) in (4, 6, 8):
            nums = [None if isinstance(v, float) and math.isnan(v) else v for v in value]
            return BoundingBox.from_args(nums)
        raise ValidationError(
            "a bounding box is a BoundingBox or (xmin, ymin, xmax, ymax[, zmin, zmax[, mmin, "
            f"mmax]]), got {value!r}"
        )

    @staticmethod
    def from_args(nums: list[Any]) -> BoundingBox:
        """A box from the positional numbers of :meth:`args` (``None`` for a missing range)."""
        if len(nums) not in (4, 6, 8) or any(v is None for v in nums[:4]):
            raise ValidationError(
                "a bounding box is xmin, ymin, xmax, ymax (then optionally zmin, zmax and mmin, "
                f"mmax), got {nums!r}"
            )
        z = nums[4:6] if len(nums) > 4 else [None, None]
        m = nums[6:8] if len(nums) > 6 else [None, None]
        return BoundingBox(nums[0], nums[1], nums[2], nums[3], z[0], z[1], m[0], m[1])

    def to_list(self) -> list[float]:
        """``[xmin, ymin, xmax, ymax, zmin, zmax, mmin, mmax]`` with NaN for a missing range."""
        nan = math.nan
        return [
            self.xmin,
            self.ymin,
            self.xmax,
            self.ymax,
            nan if self.zmin is None else self.zmin,
            nan if self.zmax is None else self.zmax,
            nan if self.mmin is None else self.mmin,
            nan if self.mmax is None else self.mmax,
        ]

    def to_dict(self) -> dict[str, float]:
        """The JSON form: ``{"xmin": .., "ymin": .., "xmax": .., "ymax": ..}`` plus the Z and M
        keys when set."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def args(self) -> list[float | None]:
        """The positional numbers of the text form (a missing Z before a set M is ``None``)."""
        out: list[float | None] = [self.xmin, self.ymin, self.xmax, self.ymax]
        if self.mmin is not None:
            out += [self.zmin, self.zmax, self.mmin, self.mmax]
        elif self.zmin is not None:
            out += [self.zmin, self.zmax]
        return out


def intersects_mask(arr: pa.Array | pa.ChunkedArray, box: BoundingBox) -> pa.BooleanArray:
    """Per WKB value: whether its bounding box intersects ``box`` (null for null values)."""
    out: pa.BooleanArray = _native.geo_intersects_mask(_storage(arr), box.to_list())
    return out
