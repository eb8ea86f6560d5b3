//! [`ChatBody`]: the JSON body of a chat request, with the fields every wire names alike
//! (OpenAI's Chat Completions, Anthropic's Messages, Ollama's `/api/chat`) and the wire's own
//! fields beside them.

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_with::skip_serializing_none;

use super::http::write_json;
use crate::model::ProviderError;

/// A chat request's body: `model`, `messages`, `stream` and `tools` as every wire has them,
/// and `own`, the wire's own fields, written beside them in the same object.
#[skip_serializing_none]
#[derive(Serialize)]
pub(crate) struct ChatBody<'a, M, X> {
    /// The model's name.
    pub(crate) model: &'a str,
    /// The conversation, in the wire's message format.
    pub(crate) messages: Vec<M>,
    /// Whether the answer is streamed.
    pub(crate) stream: bool,
    /// The offered tools in the wire's format; left out when none are offered.
    pub(crate) tools: Option<&'a RawValue>,
    /// The wire's own fields.
    #[serde(flatten)]
    pub(crate) own: X,
}

impl<M: Serialize, X: Serialize> ChatBody<'_, M, X> {
    /// The body as JSON bytes.
    pub(crate) fn write(&self) -> Result<Bytes, ProviderError> {
        write_json(self)
    }
}
