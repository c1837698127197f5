//! JSON that may nest deeply, such as the Iceberg or Avro schema of a table with deeply nested
//! columns: parsed without serde_json's fixed recursion limit (128 levels, which a struct
//! nested about 42 times already exceeds), but still bounded. The nesting is measured first by
//! a flat scan, so hostile input deeper than [`MAX_DEPTH`] is refused before any recursion
//! (parsing, walking or dropping the value) could overflow the stack.

use serde_json::Value;

use crate::{Error, Result};

/// The deepest nesting of JSON arrays and objects parsed. An Iceberg schema takes three levels
/// per nested struct and an Avro schema four, so this is far beyond the 64 levels of nested
/// fields that Arrow's C data interface (and so pyarrow) can exchange, while its recursion
/// stays well inside a 2 MiB thread stack.
pub const MAX_DEPTH: usize = 1024;

/// The deepest nesting of arrays and objects in `text`, counting no further than `limit + 1`.
/// Brackets inside strings do not count; malformed text is left for the parser to report.
pub fn nesting_depth(text: &[u8], limit: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    if deepest > limit {
                        break;
                    }
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Parses `text`, which names itself `what` in errors: `Unsupported` when it nests deeper
/// than [`MAX_DEPTH`] (valid but beyond what icefloe reads), `CorruptFile` when it is not JSON.
pub fn parse(text: &[u8], what: &str) -> Result<Value> {
    if nesting_depth(text, MAX_DEPTH) > MAX_DEPTH {
        return Err(Error::unsupported(format!(
            "{what} nests JSON arrays and objects more than {MAX_DEPTH} levels deep, \
             deeper than icefloe reads"
        )));
    }
    let bad = |e: &dyn std::fmt::Display| Error::corrupt(format!("{what} is not valid JSON: {e}"));
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    // a stream of exactly one value: nothing but whitespace may follow it
    let mut values = de.into_iter::<Value>();
    let value = match values.next() {
        Some(v) => v.map_err(|e| bad(&e))?,
        None => return Err(bad(&"the text is empty")),
    };
    match values.next() {
        None => Ok(value),
        Some(Err(e)) => Err(bad(&e)),
        Some(Ok(_)) => Err(bad(&format!(
            "more than one value (at byte {})",
            values.byte_offset()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        // an Iceberg struct nested `levels` times: 3 JSON levels each, plus the root object
        let mut s = r#"{"type":"struct","fields":[X]}"#.to_owned();
        for i in 0..levels {
            let inner = format!(
                r#"{{"id":{i},"name":"f","required":false,"type":{{"type":"struct","fields":[X]}}}}"#
            );
            s = s.replacen('X', &inner, 1);
        }
        s.replacen(
            'X',
            r#"{"id":-1,"name":"v","required":false,"type":"long"}"#,
            1,
        )
    }

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(nesting_depth(br#"{"a":"[[{{\"[","b":[1,[2]]}"#, 10), 3);
        assert_eq!(nesting_depth(b"1", 10), 0);
        // stops counting past the limit
        assert_eq!(nesting_depth(&[b'['; 100], 5), 6);
    }

    #[test]
    fn parses_deeper_than_serde_json_default() {
        let text = nested(200);
        assert!(serde_json::from_str::<Value>(&text).is_err());
        let v = parse(text.as_bytes(), "schema").unwrap();
        assert_eq!(v["type"], "struct");
    }

    #[test]
    fn parses_up_to_the_bound_on_a_small_stack() {
        // the bound itself parses, walks and drops on a thread with a 2 MiB stack
        let text = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let v = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse(text.as_bytes(), "x").map(|v| v.to_string().len()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(v, Ok(2 * MAX_DEPTH));
    }

    #[test]
    fn refuses_beyond_the_bound_as_unsupported() {
        let deep = "[".repeat(1_000_000);
        let e = parse(deep.as_bytes(), "schema").unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
        assert!(e.message().contains("1024 levels"), "{e}");
        let e = parse(b"{\"a\":", "schema").unwrap_err();
        assert!(matches!(e, Error::CorruptFile(_)), "{e:?}");
        assert!(parse(b"[] x", "schema").is_err());
    }
}
