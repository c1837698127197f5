//! A bounds-checked reader of Well-known binary (OGC Simple Features 1.2.1, ISO WKB: XY, XYZ,
//! XYM, XYZM) that visits every coordinate of a geometry without building it.
//!
//! Accepted: byte order 0 (big-endian) or 1 (little-endian) per (sub)geometry; ISO type codes
//! 1-7 plus 1000 (Z), 2000 (M) or 3000 (ZM); the EWKB flags 0x80000000 (Z), 0x40000000 (M) and
//! 0x20000000 (an SRID follows, skipped), which PostGIS and shapely write by default for 3D.
//! Polyhedral surfaces (15), TINs (16) and triangles (17) are read by [`visit_lenient`] only
//! (GEOS and DuckDB read none of them). Anything else (curves, truncated input, counts that
//! exceed the bytes left, nesting deeper than [`MAX_DEPTH`], trailing bytes) is a
//! [`crate::Error::Validation`] naming the byte offset; nothing here panics or allocates in
//! proportion to a count it read.
//!
//! [`visit`] (used on write) also refuses what GEOS or DuckDB refuse to read, so that every
//! engine can read what icefloe writes: a member of a MultiPoint / MultiLineString /
//! MultiPolygon that is not a Point / LineString / Polygon, a member of a multi geometry or
//! collection whose Z/M dimensions differ from its parent's, a LineString of 1 point and a
//! polygon ring of 1 or 2 points (OGC: a LineString has 0 or at least 2 points; GEOS reads a
//! ring of 0 or at least 3 points). Ring closure is not checked (DuckDB reads unclosed rings).
//! [`visit_lenient`] (used on read, for values other engines wrote) checks only the layout.

use crate::{Error, Result};

/// How deeply collections may nest (a GeometryCollection in a GeometryCollection ...).
pub const MAX_DEPTH: usize = 32;

/// The coordinate dimensions of a (sub)geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub z: bool,
    pub m: bool,
}

impl Dims {
    fn width(self) -> usize {
        2 + usize::from(self.z) + usize::from(self.m)
    }
}

/// Receives each coordinate of a geometry: x, y, and z / m when the geometry has them.
pub trait Visitor {
    fn coord(&mut self, x: f64, y: f64, z: Option<f64>, m: Option<f64>);
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Whether the structural rules of OGC simple features are enforced (see the module doc).
    strict: bool,
}

/// A (sub)geometry's kind (1 Point .. 7 GeometryCollection) and dimensions, as a multi
/// geometry requires of its members.
#[derive(Clone, Copy)]
struct Expect {
    kind: Option<u32>,
    dims: Dims,
}

const KIND_NAMES: [&str; 8] = [
    "",
    "Point",
    "LineString",
    "Polygon",
    "MultiPoint",
    "MultiLineString",
    "MultiPolygon",
    "GeometryCollection",
];

fn dims_name(d: Dims) -> &'static str {
    match (d.z, d.m) {
        (false, false) => "XY",
        (true, false) => "XYZ",
        (false, true) => "XYM",
        (true, true) => "XYZM",
    }
}

fn malformed(pos: usize, what: impl std::fmt::Display) -> Error {
    Error::validation(format!("malformed WKB at byte {pos}: {what}"))
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| {
                malformed(
                    self.pos,
                    format!("needs {n} more bytes, {} left", self.data.len() - self.pos),
                )
            })?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self, le: bool) -> Result<u32> {
        let b: [u8; 4] = self.take(4)?.try_into().expect("4 bytes");
        Ok(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn f64(&mut self, le: bool) -> Result<f64> {
        let b: [u8; 8] = self.take(8)?.try_into().expect("8 bytes");
        Ok(if le {
            f64::from_le_bytes(b)
        } else {
            f64::from_be_bytes(b)
        })
    }

    /// A count of items each at least `min_bytes` long, checked against the bytes left.
    fn count(&mut self, le: bool, min_bytes: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.u32(le)? as usize;
        let left = self.data.len() - self.pos;
        if n.checked_mul(min_bytes).is_none_or(|need| need > left) {
            return Err(malformed(
                at,
                format!("count {n} exceeds the {left} bytes left"),
            ));
        }
        Ok(n)
    }

    fn coords(&mut self, le: bool, dims: Dims, n: usize, v: &mut dyn Visitor) -> Result<()> {
        for _ in 0..n {
            let x = self.f64(le)?;
            let y = self.f64(le)?;
            let z = if dims.z { Some(self.f64(le)?) } else { None };
            let m = if dims.m { Some(self.f64(le)?) } else { None };
            v.coord(x, y, z, m);
        }
        Ok(())
    }

    fn geometry(
        &mut self,
        depth: usize,
        expect: Option<Expect>,
        v: &mut dyn Visitor,
    ) -> Result<()> {
        let start = self.pos;
        if depth > MAX_DEPTH {
            return Err(malformed(
                start,
                format!("collections nest deeper than {MAX_DEPTH} levels"),
            ));
        }
        let le = match self.u8()? {
            0 => false,
            1 => true,
            b => {
                return Err(malformed(
                    start,
                    format!("byte order {b} (expected 0 or 1)"),
                ))
            }
        };
        let code = self.u32(le)?;
        let mut dims = Dims {
            z: code & 0x8000_0000 != 0,
            m: code & 0x4000_0000 != 0,
        };
        if code & 0x2000_0000 != 0 {
            self.u32(le)?; // EWKB SRID
        }
        let iso = code & 0x0FFF_FFFF;
        let (kind, flavour) = (iso % 1000, iso / 1000);
        match flavour {
            0 => {}
            1 => dims.z = true,
            2 => dims.m = true,
            3 => (dims.z, dims.m) = (true, true),
            _ => return Err(malformed(start, format!("geometry type code {code}"))),
        }
        if let (true, Some(e)) = (self.strict, expect) {
            if let Some(want) = e.kind.filter(|w| *w != kind) {
                let w = KIND_NAMES.get(want as usize).unwrap_or(&"Geometry");
                let k = KIND_NAMES.get(kind as usize);
                return Err(malformed(
                    start,
                    format!(
                        "a Multi{w} holds only {w}s, got {} (type {code})",
                        k.filter(|n| !n.is_empty()).unwrap_or(&"another geometry")
                    ),
                ));
            }
            if dims != e.dims {
                return Err(malformed(
                    start,
                    format!(
                        "a part with {} coordinates in a geometry with {} coordinates (every \
                         part must have its parent's Z/M dimensions)",
                        dims_name(dims),
                        dims_name(e.dims)
                    ),
                ));
            }
        }
        let point = 8 * dims.width();
        match kind {
            1 => self.coords(le, dims, 1, v),
            2 => {
                let at = self.pos;
                let n = self.count(le, point)?;
                if self.strict && n == 1 {
                    return Err(malformed(
                        at,
                        "a LineString has 0 or at least 2 points, got 1",
                    ));
                }
                self.coords(le, dims, n, v)
            }
            15..=17 if self.strict => Err(Error::validation(format!(
                "geometry type {code} ({}) is not written: GEOS and DuckDB read no polyhedral \
                 surfaces, TINs or triangles (Point .. GeometryCollection are)",
                ["PolyhedralSurface", "TIN", "Triangle"][(kind - 15) as usize]
            ))),
            3 | 17 => {
                let rings = self.count(le, 4)?;
                for _ in 0..rings {
                    let at = self.pos;
                    let n = self.count(le, point)?;
                    if self.strict && (n == 1 || n == 2) {
                        return Err(malformed(
                            at,
                            format!("a polygon ring has 0 or at least 3 points, got {n}"),
                        ));
                    }
                    self.coords(le, dims, n, v)?;
                }
                Ok(())
            }
            4..=7 | 15 | 16 => {
                // each part is a whole geometry with its own header (at least 5 bytes); a
                // polyhedral surface holds polygons, a TIN triangles
                let parts = self.count(le, 5)?;
                let member = Expect {
                    kind: match kind {
                        4..=6 => Some(kind - 3),
                        15 => Some(3),
                        16 => Some(17),
                        _ => None,
                    },
                    dims,
                };
                for _ in 0..parts {
                    self.geometry(depth + 1, Some(member), v)?;
                }
                Ok(())
            }
            _ => Err(Error::validation(format!(
                "malformed WKB at byte {start}: geometry type {code} is not a simple feature \
                 (Point .. GeometryCollection)"
            ))),
        }
    }
}

/// Visits every coordinate of the WKB geometry `data`; the whole input must be one geometry
/// that follows the structural rules of OGC simple features (see the module doc).
pub fn visit(data: &[u8], v: &mut dyn Visitor) -> Result<()> {
    read(data, true, v)
}

/// [`visit`] without the structural rules: only the layout is checked (for values written by
/// other engines, which may not enforce them).
pub fn visit_lenient(data: &[u8], v: &mut dyn Visitor) -> Result<()> {
    read(data, false, v)
}

fn read(data: &[u8], strict: bool, v: &mut dyn Visitor) -> Result<()> {
    let mut r = Reader {
        data,
        pos: 0,
        strict,
    };
    r.geometry(0, None, v)?;
    if r.pos != data.len() {
        return Err(malformed(
            r.pos,
            format!("{} trailing bytes after the geometry", data.len() - r.pos),
        ));
    }
    Ok(())
}
