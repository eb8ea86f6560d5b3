//! What the loop works out for the calls of one step before and after they run: one id per
//! call ([`UniqueIds`]), the arguments each tool will get ([`Prepared`]), and how each tool's
//! calls went for its retry budget ([`StepFailures`]).

use std::collections::{HashMap, HashSet};

use super::ToolResultKind;
use crate::{
    execute::parse_arguments, message::ToolCall, registry::RegistrySnapshot, schema::Coercion,
    tool::JsonObject,
};

/// A call with the arguments its tool will get: what the approval policy decides on, what the
/// application is shown, and what the tool runs with.
pub(super) struct Prepared {
    pub(super) call: ToolCall,
    /// The arguments parsed and, for a lenient tool, read as its schema asks; or the message
    /// saying why they are not a JSON object.
    pub(super) arguments: Result<JsonObject, String>,
    /// What the lenient reading changed.
    pub(super) coercions: Vec<Coercion>,
}

impl Prepared {
    /// Parses `call`'s arguments and reads them as its tool does (leniently when the tool is
    /// lenient in `snapshot`).
    pub(super) fn new(snapshot: &RegistrySnapshot, call: ToolCall) -> Self {
        let mut coercions = Vec::new();
        let arguments = parse_arguments(&call.arguments).map(|mut arguments| {
            // The registry reads a lenient tool's arguments the same way again before the call
            // and finds nothing left to change, so the tool gets this very object.
            coercions = snapshot.coerce_arguments(&call.name, &mut arguments);
            arguments
        });
        Self {
            call,
            arguments,
            coercions,
        }
    }
}

/// How each tool's calls of one step went, for the retry budgets: the model sees the errors
/// only after the step, so a step counts once per tool however many of its calls failed.
#[derive(Default)]
pub(super) struct StepFailures {
    /// The tools with a call that failed with invalid arguments or asked for a retry, with the
    /// last such error.
    pub(super) failed: HashMap<String, String>,
    /// The tools whose calls all succeeded.
    pub(super) succeeded: HashSet<String>,
}

impl StepFailures {
    /// Records a call's outcome; returns whether the model has to make the call again.
    pub(super) fn record(&mut self, call: &ToolCall, content: &str, kind: ToolResultKind) -> bool {
        match kind {
            ToolResultKind::InvalidArguments | ToolResultKind::RetryRequested => {
                self.succeeded.remove(&call.name);
                self.failed.insert(call.name.clone(), content.to_owned());
                true
            }
            ToolResultKind::Success => {
                if !self.failed.contains_key(&call.name) {
                    self.succeeded.insert(call.name.clone());
                }
                false
            }
            _ => false,
        }
    }
}

/// Gives the calls of one step ids no other call of the step has, in the order they come: a
/// call keeps the id the model gave unless an earlier call of the step has it, and then gets
/// that id with `_2` (`_3`, ...) appended, the first such id still free. The suffix keeps an id
/// within the characters every provider accepts (Anthropic's `tool_use` ids match
/// `^[a-zA-Z0-9_-]+$`).
///
/// A call is known by its position in the answer (its `slot`), so the id a streamed call was
/// given when it started is the one it keeps when it finishes and in the answer.
#[derive(Default)]
pub(super) struct UniqueIds {
    /// Per slot, the id the model gave and the one the call got.
    slots: HashMap<usize, (String, String)>,
    taken: HashSet<String>,
}

impl UniqueIds {
    /// The id of the call at `slot`, which the model gave the id `given`.
    pub(super) fn id(&mut self, slot: usize, given: &str) -> String {
        if let Some((original, unique)) = self.slots.get(&slot)
            && original == given
        {
            return unique.clone();
        }
        let unique = if self.taken.contains(given) {
            // One of the first `taken.len() + 1` candidates is free.
            let renamed = (2..self.taken.len() + 3)
                .map(|n| format!("{given}_{n}"))
                .find(|id| !self.taken.contains(id))
                .unwrap_or_default();
            tracing::warn!(id = %given, %renamed, "the model gave two calls of one step the same id");
            renamed
        } else {
            given.to_owned()
        };
        self.taken.insert(unique.clone());
        self.slots.insert(slot, (given.to_owned(), unique.clone()));
        unique
    }

    /// Gives every call of `calls` (an answer's, in slot order) its id.
    pub(super) fn assign(&mut self, calls: &mut [ToolCall]) {
        for (slot, call) in calls.iter_mut().enumerate() {
            call.id = self.id(slot, &call.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_ids_get_the_first_free_suffix_and_a_slot_keeps_its_id() {
        let mut ids = UniqueIds::default();
        let mut calls = ["a", "a", "a_2", "a", "b"].map(|id| ToolCall::new(id, "t", "{}"));
        ids.assign(&mut calls);
        let got: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(got, ["a", "a_2", "a_2_2", "a_3", "b"]);
        // Asked again for a slot with the same given id, the answer does not change.
        assert_eq!(ids.id(1, "a"), "a_2");
        assert_eq!(ids.id(4, "b"), "b");
    }

    #[test]
    fn a_tool_that_failed_in_a_step_counts_once_and_a_success_does_not_hide_it() {
        let mut step = StepFailures::default();
        let call = ToolCall::new("1", "echo", "{}");
        assert!(step.record(&call, "first", ToolResultKind::InvalidArguments));
        assert!(!step.record(&call, "ok", ToolResultKind::Success));
        assert!(step.record(&call, "second", ToolResultKind::RetryRequested));
        assert_eq!(step.failed.len(), 1);
        assert_eq!(step.failed["echo"], "second");
        assert!(step.succeeded.is_empty());
    }
}
