//! [`Taking`]: a tool's arguments read out of a JSON value in place, each string a `String`
//! asks for moved out of the value rather than copied, with the place a failed read stopped.

use core::cell::RefCell;

use serde::de::{
    DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor, value::BorrowedStrDeserializer,
};
use serde_json::{Error, Value};

/// Reads from the value behind `.0` as `serde_json`'s `&Value` deserializer does, but moves out
/// the strings that are read as a `String` (leaving them empty), so a call's arguments are read
/// with no copy of their text; everything else is only borrowed. A read that fails leaves
/// everything but those strings in place, so what is wrong can still be told from the value,
/// and `.1` says where it stopped.
pub(crate) struct Taking<'de, 't>(pub(crate) &'de mut Value, pub(crate) &'t Trail);

/// Where a failed read stopped: the keys and indexes from the root, gathered (innermost first)
/// as the error passes up, so a read that succeeds writes nothing.
#[derive(Default)]
pub(crate) struct Trail(RefCell<Vec<Step>>);

enum Step {
    Key(String),
    Index(usize),
}

impl Trail {
    fn push(&self, step: Step) {
        self.0.borrow_mut().push(step);
    }

    /// The place as a JSON pointer (`/legs/1/nights`; empty for the root).
    pub(crate) fn pointer(&self) -> String {
        let mut pointer = String::new();
        for step in self.0.borrow().iter().rev() {
            pointer.push('/');
            match step {
                Step::Key(key) => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
                Step::Index(index) => pointer.push_str(&index.to_string()),
            }
        }
        pointer
    }
}

/// Forwards each named `deserialize_*` method to `serde_json`'s `&Value` deserializer: values
/// that hold no strings to move, read the same way.
macro_rules! borrowed {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Error> {
                let value: &'de Value = self.0;
                value.$method($($arg,)* visitor)
            }
        )*
    };
}

/// Forwards each named `deserialize_*` method to [`Taking`]'s `deserialize_any`: objects and
/// arrays are read entry by entry in place, as `serde_json` reads them for these methods.
macro_rules! any {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Error> {
                $(let _ = $arg;)*
                self.deserialize_any(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Taking<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Self(value, trail) = self;
        match value {
            Value::Object(map) => visitor.visit_map(Entries {
                rest: map.iter_mut(),
                next: None,
                trail,
            }),
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.iter_mut().enumerate(),
                trail,
            }),
            value => {
                let value: &'de Value = value;
                value.deserialize_any(visitor)
            }
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(text) => visitor.visit_string(core::mem::take(text)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde_json's own newtypes (`RawValue`) are read by serde_json.
        if name.starts_with("$serde_json") {
            let value: &'de Value = self.0;
            return value.deserialize_newtype_struct(name, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    any! {
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }

    borrowed! {
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
    }
}

/// An object's entries, read in place.
struct Entries<'de, 't> {
    rest: serde_json::map::IterMut<'de>,
    next: Option<(&'de str, &'de mut Value)>,
    trail: &'t Trail,
}

impl<'de> MapAccess<'de> for Entries<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.rest.next() else {
            return Ok(None);
        };
        self.next = Some((key, value));
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
            .inspect_err(|_| {
                // An unknown field: the place is the field, as for its value.
                self.trail.push(Step::Key(key.clone()));
            })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let Some((key, value)) = self.next.take() else {
            return Err(serde::de::Error::custom("a value was read before its key"));
        };
        seed.deserialize(Taking(value, self.trail))
            .inspect_err(|_| self.trail.push(Step::Key(key.to_owned())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rest.len())
    }
}

/// An array's items, read in place.
struct Items<'de, 't> {
    items: core::iter::Enumerate<core::slice::IterMut<'de, Value>>,
    trail: &'t Trail,
}

impl<'de> SeqAccess<'de> for Items<'de, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some((index, item)) = self.items.next() else {
            return Ok(None);
        };
        seed.deserialize(Taking(item, self.trail))
            .map(Some)
            .inspect_err(|_| self.trail.push(Step::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Leg {
        name: String,
        nights: u8,
        note: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Plan {
        title: String,
        legs: Vec<Leg>,
        tags: Vec<String>,
        extra: Value,
    }

    #[test]
    fn strings_read_as_strings_are_moved_and_the_rest_is_left() {
        let mut value = json!({
            "title": "trip",
            "legs": [{"name": "Oslo", "nights": 2, "note": null}],
            "tags": ["a"],
            "extra": {"kept": "yes"},
        });
        let trail = Trail::default();
        let plan = Plan::deserialize(Taking(&mut value, &trail)).unwrap();
        assert_eq!(
            plan,
            Plan {
                title: "trip".to_owned(),
                legs: vec![Leg {
                    name: "Oslo".to_owned(),
                    nights: 2,
                    note: None
                }],
                tags: vec!["a".to_owned()],
                extra: json!({"kept": "yes"}),
            }
        );
        assert_eq!(
            value,
            json!({
                "title": "",
                "legs": [{"name": "", "nights": 2, "note": null}],
                "tags": [""],
                "extra": {"kept": "yes"},
            })
        );
        assert_eq!(trail.pointer(), "");
    }

    #[test]
    fn a_failed_read_says_where_it_stopped() {
        let mut value = json!({
            "title": "trip",
            "legs": [{"name": "Oslo", "nights": 2}, {"name": "Bergen", "nights": 3.0}],
            "tags": [],
            "extra": null,
        });
        let trail = Trail::default();
        let error = Plan::deserialize(Taking(&mut value, &trail)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid type: floating point `3.0`, expected u8"
        );
        assert_eq!(trail.pointer(), "/legs/1/nights");
        assert_eq!(value["legs"][1]["nights"], json!(3.0));

        let mut value = json!({"title": "trip", "legs": [{"nights": 1}]});
        let trail = Trail::default();
        let error = Plan::deserialize(Taking(&mut value, &trail)).unwrap_err();
        assert_eq!(error.to_string(), "missing field `name`");
        assert_eq!(trail.pointer(), "/legs/0");
    }

    #[test]
    fn keys_in_the_pointer_are_escaped() {
        let mut value = json!({"a/b": {"c~d": "x"}});
        let trail = Trail::default();
        let error =
            std::collections::HashMap::<String, std::collections::HashMap<String, u8>>::deserialize(
                Taking(&mut value, &trail),
            )
            .unwrap_err();
        assert!(error.to_string().starts_with("invalid type: string \"x\""));
        assert_eq!(trail.pointer(), "/a~1b/c~0d");
    }
}
