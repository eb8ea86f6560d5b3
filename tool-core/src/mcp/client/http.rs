//! The HTTP client of the streamable HTTP transport: `reqwest` with the
//! [same-origin redirect policy](crate::secrets::same_origin_redirects), and a note of why a
//! request's answer was lost.
//!
//! When an answer cannot be read (its SSE event or JSON body is over the size limit, the
//! stream breaks), `rmcp` tells the call only that the transport closed. [`ReportingClient`]
//! keeps the reason, by request id, so the call can say what happened.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::StreamExt as _;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId},
    transport::{
        common::client_side_sse::BoxedSseResponse,
        streamable_http_client::{
            StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
            StreamableHttpResponseLimits,
        },
    },
};

use super::{lock, with_causes};

/// What the HTTP client saw go wrong.
#[derive(Debug, Default)]
pub(super) struct HttpReports {
    /// Why the answers to some requests were lost, by request id.
    lost: Mutex<HashMap<RequestId, LostAnswer>>,
    /// The last failed request's error, with its causes.
    failure: Mutex<Option<String>>,
    /// The session id `rmcp` sent with its last request, if the server gave one.
    session: Mutex<Option<Arc<str>>>,
}

impl HttpReports {
    /// Why the answer to request `id` was lost, if it is known (once).
    pub(super) fn lost_answer(&self, id: &RequestId) -> Option<LostAnswer> {
        lock(&self.lost).remove(id)
    }

    /// The last failed request's error with its causes, if any (once).
    pub(super) fn failure(&self) -> Option<String> {
        lock(&self.failure).take()
    }

    /// The session id of the connection's requests, if the server gave one: the same for
    /// requests sent beside `rmcp` (see [`direct`](super::direct)).
    pub(super) fn session(&self) -> Option<Arc<str>> {
        lock(&self.session).clone()
    }

    /// Notes why the answer to `id` was lost.
    fn lost(&self, id: Option<&RequestId>, too_large: bool, error: &impl std::fmt::Display) {
        let Some(id) = id else { return };
        let reason = if too_large {
            LostAnswer::TooLarge
        } else {
            LostAnswer::Other(error.to_string())
        };
        let mut lost = lock(&self.lost);
        // Reasons nobody asked for are forgotten, all at once, rather than kept for ever.
        if lost.len() >= MAX_KEPT {
            lost.clear();
        }
        lost.insert(id.clone(), reason);
    }
}

/// Why an answer was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum LostAnswer {
    /// It was larger than the transport accepts.
    TooLarge,
    /// Something else; the error's text.
    Other(String),
}

/// How many reasons are kept for answers nobody has asked about yet.
const MAX_KEPT: usize = 64;

/// `reqwest`, reporting what went wrong; see the [module docs](self).
#[derive(Clone)]
pub(super) struct ReportingClient {
    inner: reqwest::Client,
    reports: Arc<HttpReports>,
}

impl ReportingClient {
    /// A client whose redirects stay on their origin.
    pub(super) fn new(reports: Arc<HttpReports>) -> Result<Self, reqwest::Error> {
        crate::tls::install_default_provider();
        let inner = reqwest::Client::builder()
            .redirect(crate::secrets::same_origin_redirects())
            .build()?;
        Ok(Self { inner, reports })
    }

    /// The `reqwest` client itself (its connections are shared with its clones).
    pub(super) fn reqwest(&self) -> reqwest::Client {
        self.inner.clone()
    }

    /// The response, with the errors of an SSE stream reported for `id`.
    fn watched(
        &self,
        id: Option<RequestId>,
        response: Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        match response {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let reports = self.reports.clone();
                let stream = stream.inspect(move |event| {
                    if let Err(error) = event {
                        // `rmcp`'s size error is a private type; its text is all there is.
                        let text = error.to_string();
                        let too_large = text.contains("exceeded the maximum size");
                        reports.lost(id.as_ref(), too_large, &text);
                    }
                });
                Ok(StreamableHttpPostResponse::Sse(stream.boxed(), session))
            }
            Err(error) => {
                let too_large = matches!(error, StreamableHttpError::ResponseBodyTooLarge { .. });
                self.reports.lost(id.as_ref(), too_large, &error);
                // `Client` does not give its error as its source: take it out to read its
                // causes.
                let failure = match &error {
                    StreamableHttpError::Client(inner) => with_causes(inner),
                    other => with_causes(other),
                };
                *lock(&self.reports.failure) = Some(failure);
                Err(error)
            }
            other => other,
        }
    }
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

impl StreamableHttpClient for ReportingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = request_id(&message);
        {
            let mut session = lock(&self.reports.session);
            if *session != session_id {
                session.clone_from(&session_id);
            }
        }
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.watched(id, response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
