use arrow_array::{Array, BinaryArray};

use super::*;
use crate::serde::binary::point_from_bytes;

/// A little-endian WKB header.
fn head(code: u32) -> Vec<u8> {
    let mut v = vec![1u8];
    v.extend_from_slice(&code.to_le_bytes());
    v
}

fn f(v: &mut Vec<u8>, xs: &[f64]) {
    for x in xs {
        v.extend_from_slice(&x.to_le_bytes());
    }
}

fn u(v: &mut Vec<u8>, n: u32) {
    v.extend_from_slice(&n.to_le_bytes());
}

fn point(code: u32, xs: &[f64]) -> Vec<u8> {
    let mut v = head(code);
    f(&mut v, xs);
    v
}

fn bbox(data: &[u8]) -> BBox {
    BBox::of_wkb(data).unwrap()
}

fn err(data: &[u8]) -> String {
    match BBox::of_wkb(data) {
        Err(Error::Validation(m)) => m,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn point_both_byte_orders() {
    let b = bbox(&point(1, &[1.5, -2.0]));
    assert_eq!(
        (b.min[0], b.min[1], b.max[0], b.max[1]),
        (1.5, -2.0, 1.5, -2.0)
    );
    assert!(!b.has(2) && !b.has(3));
    let mut be = vec![0u8];
    be.extend_from_slice(&1u32.to_be_bytes());
    be.extend_from_slice(&3.0f64.to_be_bytes());
    be.extend_from_slice(&4.0f64.to_be_bytes());
    let b = bbox(&be);
    assert_eq!((b.min[0], b.max[1]), (3.0, 4.0));
}

#[test]
fn polygon_and_nested_collections() {
    let mut poly = head(3);
    u(&mut poly, 2);
    u(&mut poly, 4);
    f(&mut poly, &[0.0, 0.0, 10.0, 0.0, 10.0, 5.0, 0.0, 0.0]);
    u(&mut poly, 3);
    f(&mut poly, &[1.0, 1.0, 2.0, 1.0, 1.0, 1.0]);
    let mut coll = head(7);
    u(&mut coll, 2);
    coll.extend_from_slice(&poly);
    let mut multi = head(4);
    u(&mut multi, 1);
    multi.extend_from_slice(&point(1, &[-3.0, 7.0]));
    coll.extend_from_slice(&multi);
    let b = bbox(&coll);
    assert_eq!(b.min[..2], [-3.0, 0.0]);
    assert_eq!(b.max[..2], [10.0, 7.0]);
}

#[test]
fn z_and_m_iso_and_ewkb() {
    let xyz = bbox(&point(1001, &[1.0, 2.0, 3.0]));
    assert!(xyz.has(2) && !xyz.has(3));
    let xym = bbox(&point(2001, &[1.0, 2.0, 4.0]));
    assert!(!xym.has(2) && xym.has(3) && xym.min[3] == 4.0);
    let xyzm = bbox(&point(3001, &[1.0, 2.0, 3.0, 4.0]));
    assert!(xyzm.has(2) && xyzm.has(3));
    // EWKB: Z flag, then Z+M with an SRID
    assert_eq!(bbox(&point(0x8000_0001, &[1.0, 2.0, 3.0])), xyz);
    let mut ewkb = head(0xE000_0001);
    u(&mut ewkb, 4326);
    f(&mut ewkb, &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(bbox(&ewkb), xyzm);
}

#[test]
fn nan_and_empty_follow_the_spec() {
    // POINT EMPTY (NaN coordinates) and an empty line string have no box
    assert!(!bbox(&point(1, &[f64::NAN, f64::NAN])).is_some());
    let mut empty = head(2);
    u(&mut empty, 0);
    assert!(!bbox(&empty).is_some());
    assert_eq!(bbox(&empty).to_bounds(), None);
    // POINT (1 NaN) contributes to X only: no box, but X is kept for a file's bounds
    let b = bbox(&point(1, &[1.0, f64::NAN]));
    assert!(b.has(0) && !b.has(1) && !b.is_some());
    let mut line = head(2);
    u(&mut line, 3);
    f(&mut line, &[f64::NAN, 5.0, 2.0, f64::NAN, 4.0, 6.0]);
    let b = bbox(&line);
    assert_eq!(
        (b.min[0], b.max[0], b.min[1], b.max[1]),
        (2.0, 4.0, 5.0, 6.0)
    );
}

#[test]
fn bounds_serialise_as_points() {
    let b = bbox(&point(2001, &[1.0, 2.0, 9.0]));
    let (lo, hi) = b.to_bounds().unwrap();
    assert_eq!(lo.len(), 32); // x:y:NaN:m
    assert!(f64::from_le_bytes(lo[16..24].try_into().unwrap()).is_nan());
    assert_eq!(point_from_bytes(&hi).unwrap(), (1.0, 2.0, None, Some(9.0)));
    assert_eq!(BBox::from_bounds(&lo, &hi).unwrap(), b);
    let (lo, _) = bbox(&point(1, &[1.0, 2.0])).to_bounds().unwrap();
    assert_eq!(lo.len(), 16);
}

#[test]
fn malformed_input_is_a_typed_error() {
    assert!(err(&[]).contains("byte 0"));
    assert!(err(&[2, 1, 0, 0, 0]).contains("byte order 2"));
    assert!(err(&point(1, &[1.0])).contains("needs 8 more bytes"));
    assert!(err(&point(8, &[1.0, 2.0])).contains("not a simple feature"));
    assert!(err(&point(4001, &[1.0, 2.0])).contains("type code"));
    let mut trailing = point(1, &[1.0, 2.0]);
    trailing.push(0);
    assert!(err(&trailing).contains("trailing"));
    // a count far beyond the input is refused before anything is read
    let mut huge = head(2);
    u(&mut huge, u32::MAX);
    assert!(err(&huge).contains("exceeds"));
    let mut rings = head(3);
    u(&mut rings, 1_000_000);
    assert!(err(&rings).contains("exceeds"));
    // deep nesting stops at MAX_DEPTH instead of exhausting the stack
    let mut deep = Vec::new();
    for _ in 0..1000 {
        deep.extend_from_slice(&head(7));
        u(&mut deep, 1);
    }
    deep.extend_from_slice(&point(1, &[0.0, 0.0]));
    assert!(err(&deep).contains("nest deeper"));
}

fn multi(code: u32, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut v = head(code);
    u(&mut v, parts.len() as u32);
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

fn line(code: u32, xs: &[f64], points: u32) -> Vec<u8> {
    let mut v = head(code);
    u(&mut v, points);
    f(&mut v, xs);
    v
}

fn ring(points: u32, xs: &[f64]) -> Vec<u8> {
    let mut v = head(3);
    u(&mut v, 1);
    u(&mut v, points);
    f(&mut v, xs);
    v
}

fn lenient(data: &[u8]) -> Result<BBox> {
    let mut b = BBox::default();
    wkb::visit_lenient(data, &mut b)?;
    Ok(b)
}

#[test]
fn structure_follows_simple_features_on_write() {
    let pt = point(1, &[1.0, 2.0]);
    let ls = line(2, &[0.0, 0.0, 1.0, 1.0], 2);
    let poly = ring(4, &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    // members of multi geometries must be of the matching kind (GEOS and DuckDB refuse others)
    for (code, member, want, got) in [
        (4, &ls, "MultiPoint holds only Points", "got LineString"),
        (
            4,
            &multi(4, std::slice::from_ref(&pt)),
            "MultiPoint",
            "got MultiPoint",
        ),
        (
            5,
            &pt,
            "MultiLineString holds only LineStrings",
            "got Point",
        ),
        (6, &pt, "MultiPolygon holds only Polygons", "got Point"),
        (6, &ls, "MultiPolygon", "got LineString"),
    ] {
        let w = multi(code, std::slice::from_ref(member));
        let e = err(&w);
        assert!(e.contains(want) && e.contains(got), "{e}");
        assert!(lenient(&w).is_ok(), "read leniently");
    }
    assert!(BBox::of_wkb(&multi(4, &[pt.clone(), point(1, &[f64::NAN, f64::NAN])])).is_ok());
    assert!(BBox::of_wkb(&multi(5, std::slice::from_ref(&ls))).is_ok());
    assert!(BBox::of_wkb(&multi(6, std::slice::from_ref(&poly))).is_ok());
    let any = multi(
        7,
        &[
            pt.clone(),
            ls.clone(),
            poly.clone(),
            multi(4, std::slice::from_ref(&pt)),
        ],
    );
    assert!(BBox::of_wkb(&any).is_ok());
    // members have the parent's dimensions (DuckDB refuses mixed ones); ISO and EWKB agree
    let ptz = point(1001, &[1.0, 2.0, 3.0]);
    for w in [
        multi(4, std::slice::from_ref(&ptz)),
        multi(1004, std::slice::from_ref(&pt)),
        multi(4, &[point(0x8000_0001, &[1.0, 2.0, 3.0])]),
        multi(7, std::slice::from_ref(&ptz)),
        multi(3007, &[point(1001, &[1.0, 2.0, 3.0])]),
        multi(7, &[multi(7, std::slice::from_ref(&ptz))]),
    ] {
        let e = err(&w);
        assert!(e.contains("parent's Z/M dimensions"), "{e}");
        assert!(lenient(&w).is_ok());
    }
    assert!(BBox::of_wkb(&multi(0x8000_0004, std::slice::from_ref(&ptz))).is_ok());
    assert!(BBox::of_wkb(&multi(1007, &[multi(1004, std::slice::from_ref(&ptz))])).is_ok());
    // a LineString has 0 or >= 2 points; a ring 0 or >= 3 (GEOS)
    let one = line(2, &[1.0, 2.0], 1);
    assert!(err(&one).contains("0 or at least 2 points, got 1"));
    assert!(err(&multi(5, std::slice::from_ref(&one))).contains("got 1"));
    assert!(err(&multi(7, std::slice::from_ref(&one))).contains("got 1"));
    assert!(lenient(&one).is_ok());
    assert!(BBox::of_wkb(&line(2, &[], 0)).is_ok());
    assert!(err(&ring(1, &[0.0, 0.0])).contains("ring has 0 or at least 3 points, got 1"));
    assert!(err(&ring(2, &[0.0, 0.0, 0.0, 0.0])).contains("got 2"));
    assert!(lenient(&ring(2, &[0.0, 0.0, 0.0, 0.0])).is_ok());
    assert!(BBox::of_wkb(&ring(0, &[])).is_ok());
    assert!(BBox::of_wkb(&ring(3, &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0])).is_ok());
    // ring closure is not checked (DuckDB reads unclosed rings)
    assert!(BBox::of_wkb(&ring(4, &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])).is_ok());
    // read masks accept what other engines may have written
    let arr = BinaryArray::from(vec![Some(one.as_slice())]);
    let q = query_box(&[0.0, 0.0, 5.0, 5.0]).unwrap();
    assert!(intersects_mask(&arr, &q).unwrap().value(0));
    assert!(array_bbox(&arr)
        .unwrap_err()
        .message()
        .starts_with("geometry value 0: malformed WKB"));
}

#[test]
fn every_prefix_of_valid_wkb_errors_without_panicking() {
    let mut poly = head(1003);
    u(&mut poly, 1);
    u(&mut poly, 3);
    f(&mut poly, &[0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 0.0, 1.0]);
    for n in 0..poly.len() {
        assert!(BBox::of_wkb(&poly[..n]).is_err(), "prefix {n}");
    }
    assert!(BBox::of_wkb(&poly).is_ok());
}

#[test]
fn intersection_rules() {
    let q = query_box(&[0.0, 0.0, 10.0, 10.0]).unwrap();
    assert!(bbox(&point(1, &[10.0, 10.0])).intersects(&q)); // closed ranges
    assert!(!bbox(&point(1, &[10.5, 1.0])).intersects(&q));
    assert!(!bbox(&point(1, &[f64::NAN, f64::NAN])).intersects(&q));
    let qz = query_box(&[0.0, 0.0, 10.0, 10.0, 5.0, 6.0]).unwrap();
    assert!(!bbox(&point(1001, &[1.0, 1.0, 7.0])).intersects(&qz));
    assert!(bbox(&point(1001, &[1.0, 1.0, 5.5])).intersects(&qz));
    // a value without Z is not constrained by the query's Z
    assert!(bbox(&point(1, &[1.0, 1.0])).intersects(&qz));
    // files prune on X and Y only
    let file = bbox(&point(1001, &[1.0, 1.0, 7.0]));
    assert!(file.may_intersect(&qz));
    assert!(!bbox(&point(1, &[11.0, 1.0])).may_intersect(&q));
}

#[test]
fn query_boxes_are_checked() {
    assert!(query_box(&[0.0, 0.0, 1.0]).is_err());
    assert!(query_box(&[2.0, 0.0, 1.0, 1.0]).is_err());
    assert!(query_box(&[f64::NAN, 0.0, 1.0, 1.0]).is_err());
    assert!(query_box(&[0.0, 0.0, 1.0, 1.0, 3.0, 2.0]).is_err());
    let q = query_box(&[0.0, 0.0, 1.0, 1.0, f64::NAN, f64::NAN, 1.0, 2.0]).unwrap();
    assert!(!q.has(2) && q.has(3));
}

#[test]
fn arrays_give_file_boxes_and_masks() {
    let a = point(1, &[1.0, 2.0]);
    let b = point(1, &[5.0, -1.0]);
    let arr = BinaryArray::from(vec![Some(a.as_slice()), None, Some(b.as_slice())]);
    let total = array_bbox(&arr).unwrap();
    assert_eq!(
        (total.min[0], total.max[0], total.min[1], total.max[1]),
        (1.0, 5.0, -1.0, 2.0)
    );
    let mask = intersects_mask(&arr, &query_box(&[0.0, 0.0, 2.0, 2.0]).unwrap()).unwrap();
    assert!(mask.value(0) && mask.is_null(1) && !mask.value(2));
    let bad = BinaryArray::from(vec![Some(a.as_slice()), Some(&[1u8, 1][..])]);
    let e = array_bbox(&bad).unwrap_err();
    assert!(
        e.message().starts_with("geometry value 1: malformed WKB"),
        "{e}"
    );
}

/// A triangle (17) with one ring of four points, in a TIN (16) and alone.
fn triangle(xs: &[f64]) -> Vec<u8> {
    let mut t = head(17);
    u(&mut t, 1);
    u(&mut t, 4);
    f(&mut t, xs);
    t
}

#[test]
fn surfaces_and_tins_are_read_but_not_written() {
    let tri = triangle(&[0.0, 0.0, 4.0, 0.0, 0.0, 3.0, 0.0, 0.0]);
    let mut tin = head(16);
    u(&mut tin, 2);
    tin.extend_from_slice(&tri);
    tin.extend_from_slice(&triangle(&[-1.0, 5.0, 1.0, 5.0, 0.0, 6.0, -1.0, 5.0]));
    let b = lenient(&tin).unwrap();
    assert_eq!(
        (b.min[0], b.min[1], b.max[0], b.max[1]),
        (-1.0, 0.0, 4.0, 6.0)
    );
    let mut surface = head(15);
    u(&mut surface, 1);
    let mut poly = head(3);
    u(&mut poly, 1);
    u(&mut poly, 4);
    f(&mut poly, &[1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0]);
    surface.extend_from_slice(&poly);
    assert_eq!(lenient(&surface).unwrap().max[0], 2.0);
    assert_eq!(lenient(&tri).unwrap().max[1], 3.0);
    for (g, name) in [
        (&tri, "Triangle"),
        (&tin, "TIN"),
        (&surface, "PolyhedralSurface"),
    ] {
        let m = err(g);
        assert!(m.contains(name) && m.contains("GEOS and DuckDB"), "{m}");
    }
}
