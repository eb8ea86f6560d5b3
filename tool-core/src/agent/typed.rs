//! The typed runs of an [`Agent`]: turns run with an output spec (`output.rs`) through the
//! tool-call loop (`run.rs`). Their own file, so that the loop may use the output spec while
//! the spec needs nothing of the loop.

use std::sync::Arc;

use futures::{StreamExt as _, stream::BoxStream};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{
    Agent, AgentError, AgentEvent, ApprovalDecision, TurnOptions,
    output::{OutputEvent, OutputMode, OutputOptions, OutputResponse, TypedOutput},
    run,
};

impl Agent {
    /// Runs a turn that ends with a value of type `T` instead of text.
    ///
    /// The output's schema is `T`'s JSON Schema (a `T` whose schema is not an object, such as
    /// an enum or a number, is wrapped as `{"value": …}`). How the model is asked for it is the
    /// run's [`OutputMode`] ([`OutputOptions::mode`]; the tool mode unless set):
    ///
    /// - **Tool mode**: the model is offered one more tool, [`OUTPUT_TOOL`](super::OUTPUT_TOOL) (`final_result`),
    ///   whose parameters are the output's schema. The model may call other tools first; the
    ///   run ends when it calls the output tool with a value that validates against the
    ///   schema, deserializes into `T` and passes the validators of
    ///   [`OutputOptions::validator`]. A text answer counts as an invalid output: the model is
    ///   asked to call the output tool. A `T` that is an enum of variants that each hold an
    ///   object (`enum Reply { Booked(Booking), Refused { reason: String } }`, in serde's
    ///   default form) has one output tool per variant instead, `final_result_<Variant>`, whose
    ///   parameters are the variant's data.
    /// - **Native mode**: the request carries the schema in the provider's structured-output
    ///   form ([`ResponseFormat`](crate::model::ResponseFormat)), and the model's text answer (once it makes no more tool
    ///   calls) is the output, checked the same way. On Anthropic this is the tool mode
    ///   unless the client has structured outputs on (`AnthropicConfig::structured_outputs`;
    ///   older models refuse them).
    /// - **Prompted mode**: the output's schema goes into the request's instructions (added to
    ///   the system prompt, or as one; the conversation does not keep it), with the provider's
    ///   JSON mode where it has one ([`ResponseFormat::JsonObject`](crate::model::ResponseFormat::JsonObject)); the text answer is the
    ///   output, as in native mode. A Markdown code fence around the JSON is taken off.
    ///
    /// - An invalid output is answered with what is wrong (where, what was expected, what came:
    ///   the words of the registry's argument errors), and the model tries again, at most
    ///   [`OutputOptions::max_retries`] times (1 by default); then the run fails with
    ///   [`AgentError::OutputRetriesExhausted`], which holds the last raw output. In tool mode
    ///   the message is the output call's result; in the other modes, a user message.
    /// - The output tool called together with other tools: the other calls run first, then the
    ///   output is checked and, when valid, the run ends (every call's result is kept, in call
    ///   order). Several output calls in one step: the first valid one is the output. Calls
    ///   that wait for approval stop the run with [`AgentError::AwaitingApproval`];
    ///   [`continue_output`](Self::continue_output) answers them and resumes the run into its
    ///   output.
    ///
    /// A tool choice that allows only some tools ([`ToolChoice::Allowed`](crate::model::ToolChoice::Allowed)) allows the
    /// output tools too, in tool mode, so that the model can always give the output.
    ///
    /// The output call is not counted in [`AgentResponse::tool_calls`](super::AgentResponse::tool_calls) nor its corrections in
    /// [`AgentResponse::retried_calls`](super::AgentResponse::retried_calls) ([`OutputResponse::output_retries`] counts those). A
    /// registry tool named `final_result` is shadowed during a typed turn in tool mode.
    ///
    /// [`stream_output`](Self::stream_output) streams the turn and the output as it arrives.
    pub async fn chat_output<T>(
        &self,
        text: impl Into<String>,
    ) -> Result<OutputResponse<T>, AgentError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        self.chat_output_with(text, OutputOptions::new()).await
    }

    /// Like [`chat_output`](Self::chat_output), with a retry budget, validators and turn
    /// settings.
    pub async fn chat_output_with<T>(
        &self,
        text: impl Into<String>,
        options: OutputOptions<T>,
    ) -> Result<OutputResponse<T>, AgentError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let (spec, turn) = self.typed_turn(options);
        let response = run::turn(
            self.inner.clone(),
            run::Input::User(text.into()),
            turn,
            None,
        )
        .await?;
        spec.finish(response)
    }

    /// Answers the calls a typed turn left waiting for approval (as
    /// [`continue_with`](Self::continue_with) does) and goes on with that turn until it ends
    /// with a value of type `T`. Give the same `T` and mode as the turn that stopped; the
    /// output retry budget starts afresh. The turn may have stopped in another agent over the
    /// same conversation (saved and loaded with the conversation's pending calls).
    pub async fn continue_output<T, I, S>(
        &self,
        decisions: I,
        options: OutputOptions<T>,
    ) -> Result<OutputResponse<T>, AgentError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
        I: IntoIterator<Item = (S, ApprovalDecision)>,
        S: Into<String>,
    {
        let (spec, turn) = self.typed_turn(options);
        let input = run::Input::Decisions(super::collect_decisions(decisions));
        let response = run::turn(self.inner.clone(), input, turn, None).await?;
        spec.finish(response)
    }

    /// Like [`chat_output`](Self::chat_output), as a stream; see
    /// [`stream_output_with`](Self::stream_output_with).
    pub fn stream_output<T>(
        &self,
        text: impl Into<String>,
    ) -> BoxStream<'static, Result<OutputEvent<T>, AgentError>>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        self.stream_output_with(text, OutputOptions::new())
    }

    /// Like [`chat_output_with`](Self::chat_output_with), as a stream: the turn's [`AgentEvent`]s, a
    /// [`Partial`](OutputEvent::Partial) view of the output each time more of its JSON has
    /// arrived, and last the accepted output ([`OutputEvent::Done`]) or an `Err`.
    ///
    /// The partial view is the output's JSON so far with its open strings and brackets closed
    /// (a string comes as far as it has arrived; a member whose key or value is cut is left
    /// out), sent when it changes: in tool mode from the output tool's arguments, in native
    /// and prompted modes from the text. A new attempt (after an invalid output) starts over
    /// from an empty view. The partial view is not validated; only the final value is.
    ///
    /// ```
    /// use futures::StreamExt as _;
    /// use tool_core::{
    ///     Agent, AgentOptions,
    ///     agent::{OUTPUT_TOOL, OutputEvent, OutputOptions},
    ///     model::TestModel,
    /// };
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let dir = tempfile::tempdir().unwrap();
    /// let agent = Agent::new(
    ///     TestModel::new().call_tools([OUTPUT_TOOL]),
    ///     AgentOptions::new().root_dir(dir.path()),
    /// );
    /// let mut events = agent.stream_output_with::<u32>("count", OutputOptions::new());
    /// let mut output = None;
    /// while let Some(event) = events.next().await {
    ///     match event.unwrap() {
    ///         OutputEvent::Partial(partial) => println!("so far: {partial}"),
    ///         OutputEvent::Done(done) => output = Some(done.output),
    ///         _ => {}
    ///     }
    /// }
    /// assert!(output.is_some());
    /// # });
    /// ```
    pub fn stream_output_with<T>(
        &self,
        text: impl Into<String>,
        options: OutputOptions<T>,
    ) -> BoxStream<'static, Result<OutputEvent<T>, AgentError>>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let (spec, turn) = self.typed_turn(options);
        let mut partial = spec.partial();
        self.stream_turn(run::Input::User(text.into()), turn)
            .flat_map(move |event| {
                let events: Vec<Result<OutputEvent<T>, AgentError>> = match event {
                    Ok(AgentEvent::Done(response)) => {
                        vec![spec.finish(response).map(OutputEvent::Done)]
                    }
                    Ok(event) => {
                        let seen = partial.see(&event).map(OutputEvent::Partial);
                        std::iter::once(OutputEvent::Agent(event))
                            .chain(seen)
                            .map(Ok)
                            .collect()
                    }
                    Err(error) => vec![Err(error)],
                };
                futures::stream::iter(events)
            })
            .boxed()
    }

    /// The output spec of a typed turn and the turn's settings that carry it.
    fn typed_turn<T>(&self, options: OutputOptions<T>) -> (Arc<TypedOutput<T>>, TurnOptions)
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let model = &self.inner.model;
        let mode = options
            .mode
            .unwrap_or_else(|| OutputMode::default_for(model.provider()))
            .on(model.structured_output());
        let spec = Arc::new(TypedOutput::<T>::new(
            mode,
            options.max_retries,
            options.validators,
        ));
        let mut turn = options.turn;
        turn.output = Some(spec.clone());
        (spec, turn)
    }
}
