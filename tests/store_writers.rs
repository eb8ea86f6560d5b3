//! The concurrent writers of the store behaviour tests, shared by the tests (in-process) and
//! the `store_writer` binary (the second OS process).

use std::{future::Future, ops::Range, sync::Arc};

use tool_core::{
    Conversation,
    context::SavedConversation,
    model::Message,
    session::{PreferenceError, PreferenceStore},
    store::{ConversationError, ConversationKey, ConversationStore},
};

/// Writers in all, across both processes.
pub const WRITERS: usize = 32;
/// Keys every writer writes.
pub const SHARED_KEYS: usize = 4;
/// Rounds of changes before the final values.
pub const ROUNDS: usize = 3;

/// The value writer `writer` leaves on its own key `own_<writer>`.
pub fn own_final(writer: usize) -> bool {
    writer.is_multiple_of(3)
}

/// The value every writer leaves on `shared_<key>`.
pub fn shared_final(key: usize) -> bool {
    key.is_multiple_of(2)
}

/// Runs the writers `writers` at once, each with a store of its own from `open`: each flips
/// its own key and the shared keys for a few rounds, writes and removes a scratch key, and
/// ends with the final values.
pub async fn write_preferences<F, Fut>(
    open: F,
    writers: Range<usize>,
) -> Result<(), PreferenceError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn PreferenceStore>>,
{
    let tasks = writers.map(|writer| {
        let store = open();
        async move {
            let store = store.await;
            let own = format!("own_{writer}");
            for round in 0..ROUNDS {
                store.set(&own, round % 2 == 1).await?;
                for key in 0..SHARED_KEYS {
                    store
                        .set(&format!("shared_{key}"), (round + writer) % 2 == 0)
                        .await?;
                }
            }
            let scratch = format!("scratch_{writer}");
            store.set(&scratch, true).await?;
            store.remove(&scratch).await?;
            store.set(&own, own_final(writer)).await?;
            for key in 0..SHARED_KEYS {
                store
                    .set(&format!("shared_{key}"), shared_final(key))
                    .await?;
            }
            Ok::<(), PreferenceError>(())
        }
    });
    for result in futures::future::join_all(tasks).await {
        result?;
    }
    Ok(())
}

/// The conversation writer `writer` saves under `w<writer>`.
pub fn own_conversation(writer: usize) -> SavedConversation {
    let mut context = Conversation {
        system_prompt: format!("You are writer {writer}."),
        ..Conversation::default()
    };
    for n in 0..writer % 5 {
        context
            .messages
            .push(Message::user(format!("message {n} of {writer}")));
    }
    context.notes.push(format!("note of {writer}"));
    let mut saved = SavedConversation::new(format!("writer {writer}"), context);
    saved.saved_at = format!("2030-01-01T00:00:{:02}Z", writer % 60);
    saved
}

/// The conversation every writer saves last under `shared`.
pub fn shared_conversation() -> SavedConversation {
    let context = Conversation {
        system_prompt: "Shared.".to_owned(),
        messages: vec![Message::user("hello"), Message::assistant("hi")],
        ..Conversation::default()
    };
    let mut saved = SavedConversation::new("shared", context);
    saved.saved_at = "2031-01-01T00:00:00Z".to_owned();
    saved
}

/// Runs the writers `writers` at once on one conversation store (in `scope`): each saves the
/// shared conversation with its own content, then its own, then the shared one again.
pub async fn write_conversations(
    store: Arc<dyn ConversationStore>,
    scope: &str,
    writers: Range<usize>,
) -> Result<(), ConversationError> {
    let shared = ConversationKey::new(scope, "shared")?;
    let tasks = writers.map(|writer| {
        let store = store.clone();
        let shared = &shared;
        async move {
            let own = ConversationKey::new(scope, format!("w{writer}"))?;
            store.save(shared, &own_conversation(writer)).await?;
            store.save(&own, &own_conversation(writer)).await?;
            store.save(shared, &shared_conversation()).await
        }
    });
    for result in futures::future::join_all(tasks).await {
        result?;
    }
    Ok(())
}
