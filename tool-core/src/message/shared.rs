//! [`SharedStr`]: immutable text shared, not copied, between the events of a stream and the
//! final message (a tool call's arguments can be megabytes).

use std::{borrow::Borrow, fmt, ops::Deref, sync::Arc};

/// Immutable UTF-8 text behind a reference count: cloning it copies no text.
///
/// A tool call's arguments arrive once and then appear in a stream's
/// [`ToolCallDelta`](crate::model::ModelEvent::ToolCallDelta), its
/// [`ToolCallFinished`](crate::model::ModelEvent::ToolCallFinished), the final message and the
/// conversation; all of them share one buffer. Made from a `String` it keeps the string's
/// buffer as it is.
///
/// It reads as a `&str` (through `Deref`), compares with `str` and `String`, and serializes as
/// a JSON string.
///
/// ```
/// use tool_core::message::SharedStr;
///
/// let arguments = SharedStr::from(String::from(r#"{"city":"Paris"}"#));
/// let copy = arguments.clone();
/// assert_eq!(copy, r#"{"city":"Paris"}"#);
/// assert_eq!(copy.as_ptr(), arguments.as_ptr());
/// assert!(arguments.starts_with('{'));
/// ```
#[derive(Clone)]
pub struct SharedStr {
    buffer: Buffer,
    /// The text's range in the buffer (on char boundaries).
    start: usize,
    end: usize,
}

#[derive(Clone)]
enum Buffer {
    Static(&'static str),
    /// Copied text: one allocation for the count and the text.
    Str(Arc<str>),
    /// A `String` taken over as it is.
    String(Arc<String>),
}

impl SharedStr {
    /// Text from a string literal, with no allocation.
    pub const fn from_static(text: &'static str) -> Self {
        Self {
            buffer: Buffer::Static(text),
            start: 0,
            end: text.len(),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        let whole: &str = match &self.buffer {
            Buffer::Static(text) => text,
            Buffer::Str(text) => text,
            Buffer::String(text) => text,
        };
        // The range is always on char boundaries of the buffer (see `slice_ref`).
        whole.get(self.start..self.end).unwrap_or_default()
    }

    /// The part of this text that `text` is, sharing this text's buffer (no copy). A `text`
    /// that is not a slice of this one is copied.
    // Gemini's decoder is its only user outside the tests.
    #[cfg_attr(not(feature = "gemini"), allow(dead_code))]
    pub(crate) fn slice_ref(&self, text: &str) -> Self {
        let whole = self.as_str();
        let offset = (text.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
        if offset <= whole.len() && text.len() <= whole.len() - offset {
            // `text` is a `str` inside `whole`, so both ends are char boundaries.
            Self {
                buffer: self.buffer.clone(),
                start: self.start + offset,
                end: self.start + offset + text.len(),
            }
        } else {
            Self::from(text)
        }
    }
}

impl Default for SharedStr {
    fn default() -> Self {
        Self::from_static("")
    }
}

impl PartialEq for SharedStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedStr {}

impl PartialOrd for SharedStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::hash::Hash for SharedStr {
    /// Hashes as the `str` does, as `Borrow<str>` requires.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<String> for SharedStr {
    /// Keeps the string's buffer; no copy.
    fn from(text: String) -> Self {
        let end = text.len();
        Self {
            buffer: Buffer::String(Arc::new(text)),
            start: 0,
            end,
        }
    }
}

impl From<&str> for SharedStr {
    fn from(text: &str) -> Self {
        Self {
            buffer: Buffer::Str(Arc::from(text)),
            start: 0,
            end: text.len(),
        }
    }
}

impl From<&String> for SharedStr {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

impl From<Box<str>> for SharedStr {
    fn from(text: Box<str>) -> Self {
        Self::from(String::from(text))
    }
}

impl From<Arc<str>> for SharedStr {
    fn from(text: Arc<str>) -> Self {
        let end = text.len();
        Self {
            buffer: Buffer::Str(text),
            start: 0,
            end,
        }
    }
}

impl From<std::borrow::Cow<'_, str>> for SharedStr {
    fn from(text: std::borrow::Cow<'_, str>) -> Self {
        match text {
            std::borrow::Cow::Borrowed(text) => Self::from(text),
            std::borrow::Cow::Owned(text) => Self::from(text),
        }
    }
}

impl From<&SharedStr> for SharedStr {
    fn from(text: &SharedStr) -> Self {
        text.clone()
    }
}

impl From<SharedStr> for String {
    /// Takes the buffer back when it is a whole `String` no one else shares; copies otherwise.
    fn from(text: SharedStr) -> Self {
        match text.buffer {
            Buffer::String(buffer) if text.start == 0 && text.end == buffer.len() => {
                Arc::try_unwrap(buffer).unwrap_or_else(|shared| shared.as_str().to_owned())
            }
            _ => text.as_str().to_owned(),
        }
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        self == other.as_str()
    }
}

impl serde::Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for SharedStr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_keeps_its_buffer_and_clones_share_it() {
        let text = String::from("{\"a\":1}");
        let pointer = text.as_ptr();
        let shared = SharedStr::from(text);
        assert_eq!(shared.as_ptr(), pointer);
        assert_eq!(shared.clone().as_ptr(), pointer);
        assert_eq!(shared, "{\"a\":1}");
    }

    #[test]
    fn a_slice_of_it_is_shared_and_anything_else_copied() {
        let whole = SharedStr::from(String::from("{\"args\":{\"x\":\"é\"}}"));
        let inner = &whole[8..18];
        let shared = whole.slice_ref(inner);
        assert_eq!(shared, "{\"x\":\"é\"}");
        assert_eq!(shared.as_ptr(), inner.as_ptr());
        let part = shared.slice_ref(&shared[5..9]);
        assert_eq!(part, "\"é\"");
        assert_eq!(part.as_ptr(), whole[13..].as_ptr());
        let elsewhere = whole.slice_ref("{\"x\":\"é\"}");
        assert_eq!(elsewhere, shared);
        assert_ne!(elsewhere.as_ptr(), inner.as_ptr());
    }

    #[test]
    fn a_string_comes_back_without_a_copy_when_not_shared() {
        let text = String::from("abc");
        let pointer = text.as_ptr();
        let back = String::from(SharedStr::from(text));
        assert_eq!(back.as_ptr(), pointer);
        let shared = SharedStr::from(String::from("abc"));
        let _other = shared.clone();
        assert_eq!(String::from(shared), "abc");
    }

    #[test]
    fn it_serializes_as_a_json_string() {
        let shared = SharedStr::from("say \"hi\"");
        let json = serde_json::to_string(&shared).unwrap();
        assert_eq!(json, r#""say \"hi\"""#);
        assert_eq!(serde_json::from_str::<SharedStr>(&json).unwrap(), shared);
    }
}
