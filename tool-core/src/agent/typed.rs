//! [`Agent::chat_output`]: a turn run with an output spec (`output.rs`) through the tool-call
//! loop (`run.rs`). Its own file, so that the loop may use the output spec while the spec
//! needs nothing of the loop.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{
    Agent, AgentError,
    output::{OutputOptions, OutputResponse, TypedOutput},
    run,
};

impl Agent {
    /// Runs a turn that ends with a value of type `T` instead of text.
    ///
    /// **Tool mode**: the model is offered one more tool, [`OUTPUT_TOOL`](super::OUTPUT_TOOL) (`final_result`),
    /// whose parameters are `T`'s JSON Schema (a `T` whose schema is not an object, such as an
    /// enum or a number, is wrapped as `{"value": …}`). The model may call other tools first;
    /// the run ends when it calls the output tool with a value that validates against the
    /// schema, deserializes into `T` and passes the validators of
    /// [`OutputOptions::validator`].
    ///
    /// - An invalid output is answered with what is wrong (where, what was expected, what came:
    ///   the words of the registry's argument errors), and the model tries again, at most
    ///   [`OutputOptions::max_retries`] times (1 by default); then the run fails with
    ///   [`AgentError::OutputRetriesExhausted`], which holds the last raw output.
    /// - A text answer counts as an invalid output: the model is asked to call the output tool.
    /// - The output tool called together with other tools: the other calls run first, then the
    ///   output is checked and, when valid, the run ends (every call's result is kept, in call
    ///   order). Several output calls in one step: the first valid one is the output. Calls
    ///   that wait for approval stop the run with [`AgentError::AwaitingApproval`]: resuming
    ///   such a run into a typed output is not supported yet.
    ///
    /// The output call is not counted in [`AgentResponse::tool_calls`](super::AgentResponse::tool_calls) nor its corrections in
    /// [`AgentResponse::retried_calls`](super::AgentResponse::retried_calls) ([`OutputResponse::output_retries`] counts those). A
    /// registry tool named `final_result` is shadowed during a typed turn.
    ///
    /// The provider's native structured output, a prompted mode and streaming of the partial
    /// output are not supported yet; this is the tool mode alone.
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
        let spec = Arc::new(TypedOutput::<T>::new(
            options.max_retries,
            options.validators,
        ));
        let mut turn = options.turn;
        turn.output = Some(spec.clone());
        let response = run::turn(
            self.inner.clone(),
            run::Input::User(text.into()),
            turn,
            None,
        )
        .await?;
        if !response.pending_approvals.is_empty() {
            return Err(AgentError::AwaitingApproval {
                requests: response.pending_approvals,
            });
        }
        let (value, failures) = spec.take();
        // A turn with an output spec ends well only once a value is accepted.
        let output = value.ok_or(AgentError::MaxSteps {
            steps: response.steps,
        })?;
        Ok(OutputResponse {
            output,
            response,
            output_retries: failures,
        })
    }
}
