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

/// Words a request in a user's own words is full of that say nothing about the tool it needs
/// (pronouns, auxiliaries, politeness, the bits of contractions): dropped from queries only,
/// so that "can you show me what's in my notes" looks for `show` and `notes`, and not for a
/// tool whose description happens to say "you".
const FILLER_WORDS: &[&str] = &[
    "am",
    "about",
    "any",
    "anything",
    "been",
    "being",
    "but",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doesn",
    "don",
    "everything",
    "had",
    "has",
    "have",
    "he",
    "her",
    "here",
    "hey",
    "hi",
    "him",
    "his",
    "how",
    "isn",
    "just",
    "let",
    "lets",
    "ll",
    "may",
    "me",
    "might",
    "mine",
    "must",
    "my",
    "myself",
    "need",
    "ok",
    "okay",
    "our",
    "please",
    "re",
    "she",
    "should",
    "so",
    "some",
    "something",
    "stuff",
    "tell",
    "thank",
    "thanks",
    "their",
    "them",
    "then",
    "there",
    "they",
    "thing",
    "things",
    "us",
    "ve",
    "want",
    "was",
    "we",
    "were",
    "what",
    "whats",
    "which",
    "who",
    "whom",
    "why",
    "will",
    "won",
    "would",
    "you",
    "your",
    "yours",
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

/// Calls `word` with each word of a query, as written (lowercased) and stemmed, and whether
/// it is a *value* rather than a description of a tool, in order: the words [`words`] reads,
/// less the [filler words](FILLER_WORDS) of a request in a user's own words.
///
/// A value is what a request acts on, not what it asks to do: a number (`17`), a name
/// (a capitalized word other than the first: `Alice`, `Tokyo`), or a part of a file name, path,
/// address or version (`notes.txt`, `src/main.rs`, `https://example.com`).
pub(crate) fn query_words(text: &str, mut word: impl FnMut(&str, &str, bool)) {
    let mut stemmed = String::new();
    let mut buffer = String::new();
    for (at, token) in text.split_whitespace().enumerate() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        let mut chars = token.chars();
        let name = at > 0
            && chars.next().is_some_and(char::is_uppercase)
            && chars.next().is_some_and(char::is_lowercase);
        let joined = token
            .char_indices()
            .any(|(at, c)| matches!(c, '.' | '/' | ':' | '@' | '\\') && at > 0);
        pieces(token, &mut buffer, |piece| {
            if piece.chars().nth(1).is_some()
                && piece.len() <= MAX_WORD
                && !STOP_WORDS.contains(&piece.as_str())
                && !FILLER_WORDS.contains(&piece.as_str())
            {
                let value = name || joined || piece.bytes().all(|byte| byte.is_ascii_digit());
                stemmed.clear();
                stemmed.push_str(piece);
                stem_in_place(&mut stemmed);
                word(piece, &stemmed, value);
            }
        });
    }
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
pub(crate) fn stem(word: &str) -> String {
    let mut stem = word.to_owned();
    stem_in_place(&mut stem);
    stem
}

/// [`stem`], in place.
pub(crate) fn stem_in_place(stem: &mut String) {
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
    fn a_query_drops_filler_and_tells_values_from_descriptions() {
        let mut read = Vec::new();
        query_words(
            "Can you show me notes.txt of Alice and 17 more at https://example.com?",
            |word, stem, value| read.push((word.to_owned(), stem.to_owned(), value)),
        );
        let read: Vec<(&str, &str, bool)> = read
            .iter()
            .map(|(word, stem, value)| (word.as_str(), stem.as_str(), *value))
            .collect();
        assert_eq!(
            read,
            [
                ("show", "show", false),
                ("notes", "not", true),
                ("txt", "txt", true),
                ("alice", "alic", true),
                ("17", "17", true),
                ("more", "mor", false),
                ("https", "http", true),
                ("example", "exampl", true),
                ("com", "com", true),
            ]
        );
    }

    #[test]
    fn stop_words_control_characters_and_long_runs_are_dropped() {
        assert_eq!(all("the\u{0}\u{7}list of\u{1b}files"), ["list", "fil"]);
        assert!(all(&"x".repeat(100)).is_empty());
        assert!(all("\u{0}\u{1}\u{2}").is_empty());
    }
}
