//! Skipping Avro values without decoding them, compiled once per writer schema. A projected
//! read skips whole fields (say the metric maps of a manifest's data files) through these
//! plans: records of primitives inside arrays are skipped by one flat loop per block instead of
//! a recursive walk of the schema per value.

use super::binary::Reader;
use super::schema::Schema;
use crate::{Error, Result};

/// How one primitive value is skipped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prim {
    /// Nothing (null).
    Nothing,
    Bool,
    /// A varint (int, long, enum).
    Varint,
    /// Length-prefixed bytes (bytes, string).
    Bytes,
    Fixed(usize),
}

/// A compiled skip plan for one Avro schema.
#[derive(Debug, Clone)]
pub enum Skip {
    Prim(Prim),
    /// A record of primitives only, as one flat list.
    Flat(Vec<Prim>),
    Record(Vec<Skip>),
    /// A union: one plan per branch.
    Union(Vec<Skip>),
    /// An array (or, with `map_keys`, a map whose keys are strings) of items, with the smallest
    /// encoded size of one item, for rejecting impossible block counts.
    Array {
        items: Box<Skip>,
        min_item: usize,
        map_keys: bool,
    },
}

fn prim(s: &Schema) -> Option<Prim> {
    Some(match s {
        Schema::Null => Prim::Nothing,
        Schema::Boolean => Prim::Bool,
        Schema::Int | Schema::Long | Schema::Enum(_) => Prim::Varint,
        Schema::Float => Prim::Fixed(4),
        Schema::Double => Prim::Fixed(8),
        Schema::Bytes | Schema::String => Prim::Bytes,
        Schema::Fixed(n) => Prim::Fixed(*n),
        _ => return None,
    })
}

impl Skip {
    /// The plan of `s`.
    pub fn new(s: &Schema) -> Skip {
        if let Some(p) = prim(s) {
            return Skip::Prim(p);
        }
        match s {
            Schema::Record(r) => {
                let flat: Option<Vec<Prim>> = r.fields.iter().map(|f| prim(&f.schema)).collect();
                match flat {
                    Some(ps) => Skip::Flat(ps),
                    None => Skip::Record(r.fields.iter().map(|f| Skip::new(&f.schema)).collect()),
                }
            }
            Schema::Union(bs) => Skip::Union(bs.iter().map(Skip::new).collect()),
            Schema::Array { items, .. } => Skip::Array {
                items: Box::new(Skip::new(items)),
                min_item: items.min_size(),
                map_keys: false,
            },
            Schema::Map(values) => Skip::Array {
                items: Box::new(Skip::new(values)),
                min_item: 1 + values.min_size(),
                map_keys: true,
            },
            // every other schema is a primitive, handled above
            _ => Skip::Prim(Prim::Nothing),
        }
    }

    /// Reads past one value.
    pub fn skip(&self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Skip::Prim(p) => skip_prim(*p, r),
            Skip::Flat(ps) => {
                for &p in ps {
                    skip_prim(p, r)?;
                }
                Ok(())
            }
            Skip::Record(fs) => {
                for f in fs {
                    f.skip(r)?;
                }
                Ok(())
            }
            Skip::Union(bs) => {
                let i = r.long()?;
                let b = usize::try_from(i)
                    .ok()
                    .and_then(|i| bs.get(i))
                    .ok_or_else(|| Error::corrupt(format!("unknown union branch {i}")))?;
                b.skip(r)
            }
            Skip::Array {
                items,
                min_item,
                map_keys,
            } => loop {
                if r.skip_sized_block()?.is_some() {
                    continue;
                }
                let n = r.block_count(*min_item)?;
                if n == 0 {
                    return Ok(());
                }
                match (&**items, *map_keys) {
                    (Skip::Flat(ps), false) => {
                        for _ in 0..n {
                            for &p in ps {
                                skip_prim(p, r)?;
                            }
                        }
                    }
                    (items, keys) => {
                        for _ in 0..n {
                            if keys {
                                r.bytes()?;
                            }
                            items.skip(r)?;
                        }
                    }
                }
            },
        }
    }
}

#[inline(always)]
fn skip_prim(p: Prim, r: &mut Reader<'_>) -> Result<()> {
    match p {
        Prim::Varint => {
            r.long()?;
        }
        Prim::Bytes => {
            r.bytes()?;
        }
        Prim::Nothing => {}
        Prim::Bool => {
            r.boolean()?;
        }
        Prim::Fixed(n) => {
            r.fixed(n)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::binary::{put_bytes, put_long};

    /// Skip plans agree with the schema walk on every shape, and reject what it rejects.
    #[test]
    fn plans_skip_exactly_what_the_schema_walk_skips() {
        let json = r#"{"type": "record", "name": "r", "fields": [
            {"name": "a", "type": ["null", {"type": "array", "items": {"type": "record",
                "name": "kv", "fields": [{"name": "k", "type": "int"},
                                         {"name": "v", "type": "bytes"}]}}]},
            {"name": "m", "type": {"type": "map", "values": "long"}},
            {"name": "f", "type": {"type": "fixed", "name": "f4", "size": 4}},
            {"name": "d", "type": "double"},
            {"name": "b", "type": "boolean"}]}"#;
        let s = Schema::parse(json.as_bytes()).unwrap();
        let mut data = Vec::new();
        put_long(&mut data, 1); // union branch 1
        put_long(&mut data, 2);
        for (k, v) in [(1, &b"ab"[..]), (2, b"")] {
            put_long(&mut data, k);
            put_bytes(&mut data, v);
        }
        put_long(&mut data, 0);
        put_long(&mut data, -1); // sized map block
        put_long(&mut data, 3);
        put_bytes(&mut data, b"x");
        put_long(&mut data, 7);
        put_long(&mut data, 0);
        data.extend_from_slice(&[0; 12]);
        data.push(1);
        data.extend_from_slice(b"tail");
        let plan = Skip::new(&s);
        let mut r = Reader::new(&data);
        plan.skip(&mut r).unwrap();
        let mut w = Reader::new(&data);
        s.skip(&mut w).unwrap();
        assert_eq!(r.position(), w.position());
        assert_eq!(r.remaining(), 4);
        // every truncation fails in both, never panics
        for cut in 0..data.len() - 4 {
            let a = plan.skip(&mut Reader::new(&data[..cut])).is_err();
            let b = s.skip(&mut Reader::new(&data[..cut])).is_err();
            assert_eq!(a, b, "cut at {cut}");
        }
        // an unknown union branch is corrupt
        let mut bad = data.clone();
        bad[0] = 4;
        assert!(matches!(
            plan.skip(&mut Reader::new(&bad)),
            Err(Error::CorruptFile(_))
        ));
    }
}
