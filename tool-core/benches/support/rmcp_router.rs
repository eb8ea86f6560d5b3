//! A peer's baseline for the object path: rmcp's own tool router (`ToolRouter`), as an rmcp
//! server dispatches a `tools/call`. Each call gets a fresh `RequestContext` (as each request
//! does in rmcp's service loop) and the arguments as a parsed object; the router looks the tool
//! up and its `Parameters<T>` extractor calls `serde_json::from_value`.

#![allow(dead_code)]

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    RoleServer, ServerHandler, ServiceExt,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
        wrapper::Parameters,
    },
    model::{CallToolRequestParams, CallToolResponse, NumberOrString, Tool},
    service::{Peer, RequestContext, RunningService},
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::io::AsyncWriteExt;
use tool_core::JsonObject;

use crate::dispatch_cases::{
    AddArgs, BoundedArgs, NestedArgs, WideArgs, add_result, bounded_result, nested_result,
    wide_result,
};

/// A server with no handlers of its own: the router is called directly.
#[derive(Clone)]
pub(crate) struct Server;

impl ServerHandler for Server {}

/// rmcp's router holding the benchmark tools, and a peer for the request contexts (a running
/// server on an in-memory pipe, the only way rmcp hands one out).
pub(crate) struct RmcpRouter {
    router: ToolRouter<Server>,
    server: Server,
    peer: Peer<RoleServer>,
    _running: RunningService<RoleServer, Server>,
    _client: tokio::io::DuplexStream,
    _runtime: tokio::runtime::Runtime,
}

/// A route calling `function` on the arguments read by rmcp's `Parameters<A>`.
pub(crate) fn route<A>(name: &'static str, function: fn(A) -> String) -> ToolRoute<Server>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    let schema = match tool_core::__private::schema_for::<A>() {
        serde_json::Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    ToolRoute::new(
        Tool::new(name, "A benchmark tool.", Arc::new(schema)),
        move |Parameters(args): Parameters<A>| function(args),
    )
}

impl RmcpRouter {
    /// The router of the dispatch cases' tools (see `dispatch_cases::cases`).
    pub(crate) fn for_cases() -> Self {
        Self::new(vec![
            route::<AddArgs>("add", add_result),
            route::<NestedArgs>("nested", nested_result),
            route::<WideArgs>("wide", wide_result),
            route::<BoundedArgs>("bounded", bounded_result),
        ])
    }

    /// A router with `routes`, and a server that has been through the MCP handshake.
    pub(crate) fn new(routes: Vec<ToolRoute<Server>>) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("a runtime: {error}"));
        let (mut client, server_io) = tokio::io::duplex(64 * 1024);
        let running = runtime.block_on(async {
            // The client's side of the handshake, written by hand: rmcp's client is another
            // feature, and the server only needs the two messages.
            let handshake = concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
            );
            client
                .write_all(handshake.as_bytes())
                .await
                .unwrap_or_else(|error| panic!("the handshake is written: {error}"));
            Server
                .serve(server_io)
                .await
                .unwrap_or_else(|error| panic!("the rmcp server starts: {error}"))
        });
        let mut router = ToolRouter::new();
        for route in routes {
            router.add_route(route);
        }
        Self {
            router,
            server: Server,
            peer: running.peer().clone(),
            _running: running,
            _client: client,
            _runtime: runtime,
        }
    }

    /// A case's call: its text parsed into an object (as in `dispatch_cases::dispatch_object`),
    /// then [`call`](Self::call).
    pub(crate) fn dispatch(&self, name: &'static str, text: &str) -> String {
        let arguments: JsonObject = serde_json::from_str(text).unwrap_or_default();
        self.call(name, arguments)
    }

    /// Calls the tool `name` with `arguments` through the router, as rmcp's server does for a
    /// `tools/call`: the result's text, or the error's message.
    pub(crate) fn call(&self, name: &'static str, arguments: JsonObject) -> String {
        let mut params = CallToolRequestParams::new(Cow::Borrowed(name));
        params.arguments = Some(arguments);
        let context = ToolCallContext::new(
            &self.server,
            params,
            RequestContext::new(NumberOrString::Number(1), self.peer.clone()),
        );
        match crate::support::run_now(self.router.call(context)) {
            Ok(CallToolResponse::Complete(result)) => result
                .content
                .first()
                .and_then(|content| content.as_text())
                .map(|text| text.text.clone())
                .unwrap_or_default(),
            Ok(_) => String::new(),
            Err(error) => error.message.into_owned(),
        }
    }
}
