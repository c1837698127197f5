//! JSON text to variant bytes without a nesting limit and without recursion.
//!
//! `serde_json` (which the `parquet-variant-json` crate parses with) refuses documents nested
//! more than 128 levels deep. Documents it refuses for that reason are parsed here instead: an
//! iterative tokenizer builds the value tree in an arena (numbers and strings are decoded by
//! `serde_json` itself, token by token, so they mean exactly what they mean on the crate's
//! path), then every node's encoded size is computed bottom-up and the bytes are written
//! top-down into one buffer.

use std::collections::HashMap;

use serde_json::Number;

use super::walk::Malformed;

enum Node {
    /// A range of `Tree::leaves` holding the encoded leaf.
    Leaf(usize, usize),
    Array(Vec<usize>),
    /// (field name id, value node), in document order (a repeated name is refused).
    Object(Vec<(usize, usize)>),
}

#[derive(Default)]
struct Tree {
    nodes: Vec<Node>,
    leaves: Vec<u8>,
    names: Vec<String>,
    ids: HashMap<String, usize>,
}

impl Tree {
    fn leaf(&mut self, header: u8, data: &[u8]) -> usize {
        let start = self.leaves.len();
        self.leaves.push(header);
        self.leaves.extend_from_slice(data);
        self.nodes.push(Node::Leaf(start, self.leaves.len()));
        self.nodes.len() - 1
    }

    fn string(&mut self, s: &str) -> usize {
        if s.len() <= 63 {
            self.leaf(((s.len() as u8) << 2) | 1, s.as_bytes())
        } else {
            let start = self.leaves.len();
            self.leaves.push(16 << 2);
            self.leaves
                .extend_from_slice(&(s.len() as u32).to_le_bytes());
            self.leaves.extend_from_slice(s.as_bytes());
            self.nodes.push(Node::Leaf(start, self.leaves.len()));
            self.nodes.len() - 1
        }
    }

    /// A JSON number (its token, already checked to be one), exactly as Spark's `parse_json`
    /// stores it: an integer as the smallest integer type that holds it; an integer beyond
    /// int64, or a number with a fraction and no exponent, as a decimal of the smallest width
    /// whose precision holds both its digits and its scale (decimal4 up to 9, decimal8 up to
    /// 18, decimal16 up to 38: `0.0000000001` is a decimal8 of scale 10); anything else (an
    /// exponent, more than 38 digits or a scale above 38) as a double.
    fn number(&mut self, token: &str) -> usize {
        if let Ok(i) = token.parse::<i64>() {
            return if let Ok(x) = i8::try_from(i) {
                self.leaf(3 << 2, &x.to_le_bytes())
            } else if let Ok(x) = i16::try_from(i) {
                self.leaf(4 << 2, &x.to_le_bytes())
            } else if let Ok(x) = i32::try_from(i) {
                self.leaf(5 << 2, &x.to_le_bytes())
            } else {
                self.leaf(6 << 2, &i.to_le_bytes())
            };
        }
        if let Some((unscaled, scale)) = decimal_digits(token) {
            let digits = unscaled
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d + 1);
            // a width's precision bounds the scale too (the spec: scale <= precision)
            let precision = digits.max(u32::from(scale));
            let mut data = vec![scale];
            return if precision <= 9 {
                data.extend_from_slice(&(unscaled as i32).to_le_bytes());
                self.leaf(8 << 2, &data)
            } else if precision <= 18 {
                data.extend_from_slice(&(unscaled as i64).to_le_bytes());
                self.leaf(9 << 2, &data)
            } else {
                data.extend_from_slice(&unscaled.to_le_bytes());
                self.leaf(10 << 2, &data)
            };
        }
        // Rust's parser rounds correctly and gives an infinity past the double's range
        let f = token.parse::<f64>().unwrap_or(f64::NAN);
        self.leaf(7 << 2, &f.to_le_bytes())
    }

    fn name_id(&mut self, name: String) -> usize {
        if let Some(&id) = self.ids.get(&name) {
            return id;
        }
        let id = self.names.len();
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }
}

/// The unscaled value and scale of a JSON number token without an exponent, when it has at
/// most 38 significant digits and at most 38 after the point (a decimal's limits).
fn decimal_digits(token: &str) -> Option<(i128, u8)> {
    if token.contains(['e', 'E']) {
        return None;
    }
    let (negative, body) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let scale = u8::try_from(fraction.len()).ok().filter(|s| *s <= 38)?;
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0');
    if significant.len() > 38 {
        return None;
    }
    let magnitude: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    Some((if negative { -magnitude } else { magnitude }, scale))
}

/// Bytes needed for an unsigned value up to `max` (1 to 4).
fn width(max: usize) -> usize {
    match max {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xff_ffff => 3,
        _ => 4,
    }
}

fn put_uint(out: &mut [u8], at: usize, size: usize, v: usize) {
    out[at..at + size].copy_from_slice(&(v as u32).to_le_bytes()[..size]);
}

fn json_error(msg: impl std::fmt::Display, pos: usize) -> Malformed {
    Malformed(format!("JSON format error: {msg} at byte {pos}"))
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn skip_ws(&mut self) {
        let b = self.text.as_bytes();
        while self.pos < b.len() && matches!(b[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.as_bytes().get(self.pos).copied()
    }

    /// The token of a string (with its quotes), decoded by serde_json.
    fn string(&mut self) -> Result<String, Malformed> {
        let b = self.text.as_bytes();
        let start = self.pos;
        let mut i = start + 1;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        if i >= b.len() {
            return Err(json_error("EOF while parsing a string", start));
        }
        self.pos = i + 1;
        serde_json::from_str(&self.text[start..self.pos]).map_err(|e| json_error(e, start))
    }

    /// The token of a number, checked by serde_json to be a valid JSON number (one beyond a
    /// double's range included: it is still a number).
    fn number(&mut self) -> Result<&'a str, Malformed> {
        let b = self.text.as_bytes();
        let start = self.pos;
        let mut i = start;
        while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            i += 1;
        }
        self.pos = i;
        let token = &self.text[start..i];
        match serde_json::from_str::<Number>(token) {
            Ok(_) => Ok(token),
            Err(e) if e.to_string().contains("out of range") => Ok(token),
            Err(e) => Err(json_error(e, start)),
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), Malformed> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(json_error("expected value", self.pos))
        }
    }
}

enum Open {
    Array(usize),
    /// The object's node and the name of the field being read.
    Object(usize, Option<usize>),
}

fn parse(text: &str) -> Result<(Tree, usize), Malformed> {
    let mut tree = Tree::default();
    let mut p = Parser { text, pos: 0 };
    let mut open: Vec<Open> = Vec::new();
    let root;
    loop {
        // a value
        let node = match p.peek() {
            None => return Err(json_error("EOF while parsing a value", p.pos)),
            Some(b'[') => {
                p.pos += 1;
                tree.nodes.push(Node::Array(Vec::new()));
                let id = tree.nodes.len() - 1;
                if p.peek() == Some(b']') {
                    p.pos += 1;
                    Some(id)
                } else {
                    open.push(Open::Array(id));
                    None
                }
            }
            Some(b'{') => {
                p.pos += 1;
                tree.nodes.push(Node::Object(Vec::new()));
                let id = tree.nodes.len() - 1;
                if p.peek() == Some(b'}') {
                    p.pos += 1;
                    Some(id)
                } else {
                    open.push(Open::Object(id, None));
                    None
                }
            }
            Some(b'"') => {
                let s = p.string()?;
                Some(tree.string(&s))
            }
            Some(b'-' | b'0'..=b'9') => {
                let token = p.number()?;
                Some(tree.number(token))
            }
            Some(b'n') => {
                p.literal("null")?;
                Some(tree.leaf(0, &[]))
            }
            Some(b't') => {
                p.literal("true")?;
                Some(tree.leaf(1 << 2, &[]))
            }
            Some(b'f') => {
                p.literal("false")?;
                Some(tree.leaf(2 << 2, &[]))
            }
            Some(_) => return Err(json_error("expected value", p.pos)),
        };
        // where the value goes, and what comes after it
        let mut done = node;
        loop {
            if let Some(child) = done.take() {
                match open.last_mut() {
                    None => {
                        root = child;
                        if p.peek().is_some() {
                            return Err(json_error("trailing characters", p.pos));
                        }
                        return Ok((tree, root));
                    }
                    Some(Open::Array(id)) => {
                        if let Node::Array(items) = &mut tree.nodes[*id] {
                            items.push(child);
                        }
                        match p.peek() {
                            Some(b',') => p.pos += 1,
                            Some(b']') => {
                                p.pos += 1;
                                done = Some(*id);
                                open.pop();
                                continue;
                            }
                            _ => return Err(json_error("expected `,` or `]`", p.pos)),
                        }
                    }
                    Some(Open::Object(id, name)) => {
                        let name = name.take().expect("a field value follows its name");
                        if let Node::Object(fields) = &mut tree.nodes[*id] {
                            fields.push((name, child));
                        }
                        match p.peek() {
                            Some(b',') => p.pos += 1,
                            Some(b'}') => {
                                p.pos += 1;
                                done = Some(*id);
                                open.pop();
                                continue;
                            }
                            _ => return Err(json_error("expected `,` or `}`", p.pos)),
                        }
                    }
                }
            }
            break;
        }
        // an object field's name comes before its value
        if let Some(Open::Object(_, name)) = open.last_mut() {
            if p.peek() != Some(b'"') {
                return Err(json_error("key must be a string", p.pos));
            }
            let key = p.string()?;
            if p.peek() != Some(b':') {
                return Err(json_error("expected `:`", p.pos));
            }
            p.pos += 1;
            *name = Some(tree.name_id(key));
        }
    }
}

/// The variant metadata and value of one JSON document, at any nesting depth.
pub fn json_to_variant(text: &str) -> Result<(Vec<u8>, Vec<u8>), Malformed> {
    let (mut tree, root) = parse(text)?;

    // A sorted dictionary; object fields ordered by name, a repeated name refused (as Spark's
    // `parse_json` refuses it: which of the values a reader sees would be a guess).
    let mut order: Vec<usize> = (0..tree.names.len()).collect();
    order.sort_by(|&a, &b| tree.names[a].cmp(&tree.names[b]));
    let mut rank = vec![0; order.len()];
    for (r, &id) in order.iter().enumerate() {
        rank[id] = r;
    }
    for node in &mut tree.nodes {
        if let Node::Object(fields) = node {
            for f in fields.iter_mut() {
                f.0 = rank[f.0];
            }
            fields.sort_unstable_by_key(|f| f.0);
            if let Some(pair) = fields.windows(2).find(|w| w[0].0 == w[1].0) {
                let name = &tree.names[order[pair[0].0]];
                let quoted = serde_json::to_string(name).unwrap_or_else(|_| name.clone());
                return Err(Malformed(format!(
                    "duplicate object key {quoted} (a key may appear once in an object)"
                )));
            }
        }
    }
    let metadata = encode_metadata(order.iter().map(|&id| tree.names[id].as_str()))?;

    // Sizes bottom-up: children always come after their parent in the arena.
    let max_id = tree.names.len().saturating_sub(1);
    let too_big = || Malformed("the variant value is larger than 4 GiB".to_string());
    let mut size = vec![0usize; tree.nodes.len()];
    for i in (0..tree.nodes.len()).rev() {
        size[i] = match &tree.nodes[i] {
            Node::Leaf(a, b) => b - a,
            Node::Array(items) => {
                let data: usize = items.iter().map(|&c| size[c]).sum();
                let count = if items.len() > 255 { 4 } else { 1 };
                1 + count + (items.len() + 1) * width(data) + data
            }
            Node::Object(fields) => {
                let data: usize = fields.iter().map(|&(_, c)| size[c]).sum();
                let count = if fields.len() > 255 { 4 } else { 1 };
                1 + count + fields.len() * width(max_id) + (fields.len() + 1) * width(data) + data
            }
        };
        if size[i] > u32::MAX as usize {
            return Err(too_big());
        }
    }

    // Bytes top-down, each node at its position.
    let mut out = vec![0u8; size[root]];
    let mut todo = vec![(root, 0usize)];
    while let Some((node, at)) = todo.pop() {
        match &tree.nodes[node] {
            Node::Leaf(a, b) => out[at..at + (b - a)].copy_from_slice(&tree.leaves[*a..*b]),
            Node::Array(items) => {
                let data: usize = items.iter().map(|&c| size[c]).sum();
                let (large, off) = (items.len() > 255, width(data));
                let count = if large { 4 } else { 1 };
                out[at] = ((u8::from(large) << 2 | (off as u8 - 1)) << 2) | 3;
                put_uint(&mut out, at + 1, count, items.len());
                let offsets = at + 1 + count;
                let mut pos = offsets + (items.len() + 1) * off;
                let mut rel = 0;
                for (k, &c) in items.iter().enumerate() {
                    put_uint(&mut out, offsets + k * off, off, rel);
                    todo.push((c, pos));
                    pos += size[c];
                    rel += size[c];
                }
                put_uint(&mut out, offsets + items.len() * off, off, rel);
            }
            Node::Object(fields) => {
                let data: usize = fields.iter().map(|&(_, c)| size[c]).sum();
                let (large, off, idw) = (fields.len() > 255, width(data), width(max_id));
                let count = if large { 4 } else { 1 };
                out[at] =
                    ((u8::from(large) << 4 | (idw as u8 - 1) << 2 | (off as u8 - 1)) << 2) | 2;
                put_uint(&mut out, at + 1, count, fields.len());
                let ids = at + 1 + count;
                let offsets = ids + fields.len() * idw;
                let mut pos = offsets + (fields.len() + 1) * off;
                let mut rel = 0;
                for (k, &(id, c)) in fields.iter().enumerate() {
                    put_uint(&mut out, ids + k * idw, idw, id);
                    put_uint(&mut out, offsets + k * off, off, rel);
                    todo.push((c, pos));
                    pos += size[c];
                    rel += size[c];
                }
                put_uint(&mut out, offsets + fields.len() * off, off, rel);
            }
        }
    }
    Ok((metadata, out))
}

/// Version-1 metadata holding `names` (already sorted and unique) as a sorted dictionary.
fn encode_metadata<'a>(names: impl Iterator<Item = &'a str>) -> Result<Vec<u8>, Malformed> {
    let names: Vec<&str> = names.collect();
    let total: usize = names.iter().map(|n| n.len()).sum();
    let off = width(total.max(names.len()));
    if total > u32::MAX as usize {
        return Err(Malformed(
            "the variant field names exceed 4 GiB".to_string(),
        ));
    }
    let sorted = 1u8 << 4;
    let mut out = vec![0x01 | sorted | ((off as u8 - 1) << 6)];
    let put = |out: &mut Vec<u8>, v: usize| {
        out.extend_from_slice(&(v as u32).to_le_bytes()[..off]);
    };
    put(&mut out, names.len());
    let mut rel = 0;
    put(&mut out, 0);
    for n in &names {
        rel += n.len();
        put(&mut out, rel);
    }
    for n in &names {
        out.extend_from_slice(n.as_bytes());
    }
    Ok(out)
}
