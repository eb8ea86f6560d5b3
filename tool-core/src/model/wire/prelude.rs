//! What every provider client's module uses: the model types, the [`Wire`] a client speaks,
//! its settings, and the decoding helpers. Each client module starts with
//! `use super::wire::prelude::*;` and names only what is its own.

pub(crate) use crate::{
    message::{FinishReason, Message, SharedStr, ToolCall, Usage},
    model::{
        ChatRequest, ChatResponse, ModelEvent, NativeSearch, ProviderError, ProviderToolSearch,
        ResponseFormat, ToolChoice,
    },
    schema::Provider,
};

pub(crate) use super::{
    accumulate::{Answer, arguments_object},
    body::ChatBody,
    client::{Wire, http_client},
    decode::{Decoder, Text, sse_event, stream_error, truncated, unreadable},
    endpoint::{Endpoint, EnvNames, KeyHeader, provider_config},
    framing::Frame,
    http::{read_json, write_json},
};
