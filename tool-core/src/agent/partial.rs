//! A view of a JSON value whose text is still arriving: the text so far with its open string
//! and brackets closed, read by `serde_json`.

use serde_json::Value;

/// How many earlier cut points (a `,`, or just inside an opening bracket) are tried when the
/// text closed where it stops is not JSON (it stops in a key, after a `:`, in a number's
/// exponent, …).
const CUTS: usize = 4;

/// The value that the JSON text `prefix` begins, as far as it goes: open strings and brackets
/// closed, a member or element that cannot be completed left out. `None` when nothing of it
/// reads as JSON yet.
///
/// Strings come as far as they have arrived (`{"unit": "cel` reads as `{"unit": "cel"}`).
pub(crate) fn partial_value(prefix: &str) -> Option<Value> {
    let prefix = prefix.trim_start();
    let (closed, cuts) = close(prefix);
    if let Ok(value) = serde_json::from_str(&closed) {
        return Some(value);
    }
    cuts.iter().rev().take(CUTS).find_map(|&cut| {
        let (closed, _) = close(&prefix[..cut]);
        serde_json::from_str(&closed).ok()
    })
}

/// `prefix` with its open string and brackets closed, and the byte offsets where it may be cut
/// to drop an incomplete member or element: just inside each opening bracket and before each
/// `,` (outside strings).
fn close(prefix: &str) -> (String, Vec<usize>) {
    let mut closers = Vec::new();
    let mut cuts = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (at, c) in prefix.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => {
                closers.push('}');
                cuts.push(at + 1);
            }
            '[' => {
                closers.push(']');
                cuts.push(at + 1);
            }
            '}' | ']' => {
                closers.pop();
            }
            ',' => cuts.push(at),
            _ => {}
        }
    }
    let mut closed = prefix.to_owned();
    if in_string {
        if escaped {
            // A lone backslash would escape the closing quote.
            closed.pop();
        }
        closed.push('"');
    }
    let trimmed = closed.trim_end().len();
    closed.truncate(trimmed);
    closed.extend(closers.iter().rev());
    (closed, cuts)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::partial_value;

    #[test]
    fn each_prefix_reads_as_far_as_it_goes() {
        let cases = [
            ("", None),
            ("{", Some(json!({}))),
            (r#"{"cit"#, Some(json!({}))),
            (r#"{"city": ""#, Some(json!({ "city": "" }))),
            (r#"{"city": "Pa"#, Some(json!({ "city": "Pa" }))),
            (r#"{"city": "Paris", "u"#, Some(json!({ "city": "Paris" }))),
            (
                r#"{"city": "Paris", "unit":"#,
                Some(json!({ "city": "Paris" })),
            ),
            (r#"{"n": [1, 2"#, Some(json!({ "n": [1, 2] }))),
            (r#"{"n": [1, {"a": tr"#, Some(json!({ "n": [1, {}] }))),
            (r#"{"s": "a\"#, Some(json!({ "s": "a" }))),
            (r#"{"s": "a\"b", "t": 1.5e"#, Some(json!({ "s": "a\"b" }))),
            (
                r#"{"a": {"b": 1}, "c": [true"#,
                Some(json!({ "a": { "b": 1 }, "c": [true] })),
            ),
            ("[1, 2", Some(json!([1, 2]))),
            ("  7", Some(json!(7))),
            ("nul", None),
        ];
        for (prefix, expected) in cases {
            assert_eq!(partial_value(prefix), expected, "{prefix}");
        }
    }
}
