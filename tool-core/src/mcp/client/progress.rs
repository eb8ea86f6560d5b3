//! Progress notifications in the order they came, before the answer they precede.
//!
//! `rmcp` hands each notification to the client handler in a task of its own, while an
//! answer goes straight to the waiting call; so a call's last progress could be handled after
//! its answer, when nobody waits for it any more, and was kept for late progress by the call's
//! context, which holds an agent's event stream open. [`InOrder`] reads progress as the
//! transport delivers each message, in the service's own loop: every notification the server
//! sent before an answer has reached the call by the time the answer does, and a call's entry
//! can go with its answer.

use std::{borrow::Cow, sync::Weak};

use rmcp::{
    model::{JsonRpcMessage, ProgressNotificationParam, ServerJsonRpcMessage, ServerNotification},
    service::{RoleClient, TxJsonRpcMessage},
    transport::Transport,
};

/// Where [`InOrder`] hands each progress notification: the connection's shared state, which
/// knows the calls in flight. A trait, so this file needs nothing of the connection's.
pub(super) trait ProgressSink: Send + Sync + 'static {
    /// Takes one progress notification, in the order the server sent it.
    fn on_progress(&self, params: ProgressNotificationParam);
}

/// A transport whose progress notifications reach the client as they arrive.
pub(super) struct InOrder<T, S> {
    inner: T,
    shared: Weak<S>,
}

impl<T, S> InOrder<T, S> {
    pub(super) fn new(inner: T, shared: Weak<S>) -> Self {
        Self { inner, shared }
    }
}

impl<T: Transport<RoleClient>, S: ProgressSink> Transport<RoleClient> for InOrder<T, S> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message {
            if let ServerNotification::ProgressNotification(progress) = &notification.notification {
                if let Some(shared) = self.shared.upgrade() {
                    shared.on_progress(progress.params.clone());
                }
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
