//! What every provider client's module uses: the model types, the [`Wire`] a client speaks,
//! its settings, and the decoding helpers. Each client module starts with
//! `use super::wire::prelude::*;` and names only what is its own.

pub(crate) use crate::{
    message::{FinishReason, Message, SharedStr, ToolCall, Usage},
    model::{
        ChatRequest, ChatResponse, ModelEvent, ProviderError, ToolChoice,
        client::{Wire, http_client},
        endpoint::{Endpoint, EnvNames, KeyHeader, provider_config},
    },
    schema::Provider,
};

pub(crate) use super::{
    accumulate::{Answer, arguments_object},
    body::ChatBody,
    decode::{Decoder, Text, sse_event, stream_error, truncated, unreadable},
    framing::Frame,
    http::{read_json, write_json},
};
