//! The words of a tool's text, as the index and the queries read them: split on anything that
//! is not a letter or a digit and at camelCase humps, lowercased, stop words dropped, and cut to
//! a light stem so that `files`, `file` and `filed` meet.

/// The longest word kept, in bytes; longer runs (a base64 blob, a hostile query) are dropped.
const MAX_WORD: usize = 48;

/// Words too common in tool descriptions to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "the", "that", "this", "to", "with",
];

/// Calls `word` with each stemmed word of `text`, in order.
pub(crate) fn words(text: &str, word: impl FnMut(&str)) {
    words_in(text, &mut String::new(), word);
}

/// [`words`], with `buffer` to hold the word being read: a caller that reads many texts passes
/// the same buffer to each, and reads them all with no allocation per text.
pub(crate) fn words_in(text: &str, buffer: &mut String, mut word: impl FnMut(&str)) {
    pieces(text, buffer, |piece| {
        if piece.chars().nth(1).is_some()
            && piece.len() <= MAX_WORD
            && !STOP_WORDS.contains(&piece.as_str())
        {
            stem_in_place(piece);
            word(piece);
        }
    });
}

/// Calls `word` with each lowercased word of a name, as written (no stemming, nothing
/// dropped): `fs.readFile` → `fs`, `read`, `file`.
pub(crate) fn split_name(text: &str, mut word: impl FnMut(&str)) {
    pieces(text, &mut String::new(), |piece| word(piece));
}

/// Calls `piece` with each run of letters and digits of `text`, lowercased and split at
/// camelCase humps, in `buffer`, which it may change; the buffer is reused, so a text costs no
/// allocation per word.
fn pieces(text: &str, buffer: &mut String, mut piece: impl FnMut(&mut String)) {
    buffer.clear();
    let mut flush = |buffer: &mut String| {
        if !buffer.is_empty() {
            piece(buffer);
        }
        buffer.clear();
    };
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            flush(buffer);
            previous = None;
            continue;
        }
        if let Some(before) = previous {
            // A hump: `fileName` → `file|Name`, `HTTPServer` → `HTTP|Server`.
            let hump = c.is_uppercase()
                && (before.is_lowercase()
                    || before.is_numeric()
                    || (before.is_uppercase()
                        && chars.peek().is_some_and(|next| next.is_lowercase())));
            if hump {
                flush(buffer);
            }
        }
        if c.is_ascii() {
            buffer.push(c.to_ascii_lowercase());
        } else {
            buffer.extend(c.to_lowercase());
        }
        previous = Some(c);
    }
    flush(buffer);
}

/// A light suffix stripper (in the spirit of Harman's S-stemmer, with `-ing` and `-ed`): it
/// only has to map a word and its common inflections to one key, not to a real root.
#[cfg(test)]
pub(crate) fn stem(word: &str) -> String {
    let mut stem = word.to_owned();
    stem_in_place(&mut stem);
    stem
}

/// [`stem`], in place.
fn stem_in_place(stem: &mut String) {
    let len = stem.chars().count();
    if len <= 3 || !stem.is_ascii() {
        return;
    }
    if stem.ends_with("ies") && len > 4 {
        stem.truncate(stem.len() - 3);
        stem.push('y');
    } else if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|end| stem.ends_with(end))
    {
        stem.truncate(stem.len() - 2);
    } else if stem.ends_with('s')
        && !stem.ends_with("ss")
        && !stem.ends_with("us")
        && !stem.ends_with("is")
    {
        stem.pop();
    } else if stem.ends_with("ing") && len > 5 {
        stem.truncate(stem.len() - 3);
        undouble(stem);
    } else if stem.ends_with("ed") && len > 4 {
        stem.truncate(stem.len() - 2);
        undouble(stem);
    }
    // `create`, `created` and `creating` all end as `creat`.
    if stem.len() > 3 && stem.ends_with('e') {
        stem.pop();
    }
}

/// `runn` → `run`: a doubled final consonant left by `-ing` or `-ed`.
fn undouble(stem: &mut String) {
    let bytes = stem.as_bytes();
    if let [.., a, b] = bytes {
        if a == b && !matches!(a, b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z') {
            stem.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        words(text, |word| out.push(word.to_owned()));
        out
    }

    #[test]
    fn names_split_on_separators_and_humps() {
        assert_eq!(all("create_directory"), ["creat", "directory"]);
        assert_eq!(all("fs.readFile-v2"), ["fs", "read", "fil", "v2"]);
        assert_eq!(all("HTTPServerConfig"), ["http", "server", "config"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("files", "file"),
            ("directories", "directory"),
            ("created", "create"),
            ("creating", "create"),
            ("running", "run"),
            ("searches", "search"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
    }

    #[test]
    fn stop_words_control_characters_and_long_runs_are_dropped() {
        assert_eq!(all("the\u{0}\u{7}list of\u{1b}files"), ["list", "fil"]);
        assert!(all(&"x".repeat(100)).is_empty());
        assert!(all("\u{0}\u{1}\u{2}").is_empty());
    }
}
