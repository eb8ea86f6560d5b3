//! [`GuardedCall`]: one tool call as a plain future, under a panic guard and a timeout, turned
//! into the registry's outcome.

use std::{
    any::Any,
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use super::ExecuteError;
use crate::tool::{ToolError, ToolFuture};

/// A tool call that did not finish when it was made (see [`guarded`]), polled as a plain
/// future (no extra state machine around the tool's own).
///
/// Every poll runs under the same panic guard as the call was made under, so a tool that
/// panics while running or while being dropped becomes [`ExecuteError::Panicked`]. A timeout's
/// timer is made only when the tool is still running after its first poll.
pub(crate) struct GuardedCall<'a> {
    target: Target<'a>,
    stage: Stage<'a>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Where a call goes: the name the tool is registered under, and the timeout that applies to
/// it.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The tool's name, for the outcome's messages.
    pub(crate) name: &'a str,
    /// How long the call may run once started, if limited.
    pub(crate) timeout: Option<Duration>,
}

/// Where a [`GuardedCall`] is.
enum Stage<'a> {
    /// The tool's future while it runs.
    Running(ToolFuture<'a>),
    /// The result was handed out, or the call stopped.
    Done,
}

/// A step of a call: the tool's result, or the timeout that elapsed first.
type Step = Result<Result<String, ToolError>, Duration>;

impl<'a> GuardedCall<'a> {
    /// A call of `target` already made: `call` is its future.
    pub(crate) fn started(target: Target<'a>, call: ToolFuture<'a>) -> Self {
        Self {
            target,
            stage: Stage::Running(call),
            timer: None,
        }
    }

    /// Polls the tool, dropping its future as soon as it is ready or timed out. Runs inside
    /// the panic guard.
    fn step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        let Stage::Running(call) = &mut self.stage else {
            return Poll::Ready(Ok(Err(ToolError::new(
                "the call was polled again after it finished",
            ))));
        };
        if let Poll::Ready(result) = call.as_mut().poll(cx) {
            self.stop();
            return Poll::Ready(Ok(result));
        }
        let Some(after) = self.target.timeout else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stop();
            return Poll::Ready(Err(after));
        }
        Poll::Pending
    }

    /// Drops the tool's future and the timer.
    fn stop(&mut self) {
        self.stage = Stage::Done;
        self.timer = None;
    }
}

impl Future for GuardedCall<'_> {
    type Output = Result<String, ExecuteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the futures are boxed).
        let this = self.get_mut();
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.step(cx)));
        let name = this.target.name;
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(result))) => Poll::Ready(outcome(name, result)),
            Ok(Poll::Ready(Err(after))) => Poll::Ready(Err(ExecuteError::TimedOut {
                name: name.to_owned(),
                after,
            })),
            Err(payload) => {
                // A future that panicked is not polled again; drop it under a guard too.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| this.stop()));
                Poll::Ready(Err(panicked(name, payload.as_ref())))
            }
        }
    }
}

/// A call as it stands once made: finished already (a tool that never waits), or a
/// [`GuardedCall`] to await. Run it with [`outcome_of!`].
///
/// A call that finished when it was made is handed out without a guard, a timer or a second
/// look at the tool: the common case of a synchronous `#[tool]` body costs no more than its
/// outcome.
pub(crate) enum Call<'a> {
    /// The outcome.
    Done(Result<String, ExecuteError>),
    /// The tool still has to be called or polled.
    Running(GuardedCall<'a>),
}

impl Call<'_> {
    /// The call that finished with `result` when the tool `name` was called.
    #[inline]
    pub(crate) fn finished(name: &str, result: Result<String, ToolError>) -> Self {
        Self::Done(outcome(name, result))
    }
}

/// The outcome of a call made by a start (a `Result<Call, ExecuteError>`), inside the caller's
/// own `async fn`: a call that finished when it was made is handed out as it is and only a
/// running one is awaited, so the caller's future holds no second state machine and never
/// stores a finished [`Call`]. (Measured: a quick tool's call through an `impl Future for
/// Call` took 12% longer.)
macro_rules! outcome_of {
    ($start:expr) => {
        'outcome: {
            // Bound in a statement of its own, so the start's temporary is gone before the
            // await and the caller's future keeps only the running call.
            let call = match $start {
                Ok($crate::execute::Call::Running(call)) => call,
                Ok($crate::execute::Call::Done(outcome)) => break 'outcome outcome,
                Err(error) => break 'outcome Err(error),
            };
            call.await
        }
    };
}
pub(crate) use outcome_of;

/// Runs `make` (the synchronous start of a call) under the same panic guard as a call's polls.
#[inline]
pub(crate) fn guarded<R>(name: &str, make: impl FnOnce() -> R) -> Result<R, ExecuteError> {
    std::panic::catch_unwind(AssertUnwindSafe(make))
        .map_err(|payload| panicked(name, payload.as_ref()))
}

/// The registry's outcome for a panic of the tool `name`.
fn panicked(name: &str, payload: &(dyn Any + Send)) -> ExecuteError {
    ExecuteError::Panicked {
        name: name.to_owned(),
        message: panic_message(payload),
    }
}

/// The registry's outcome for what a tool returned.
#[inline]
fn outcome(name: &str, result: Result<String, ToolError>) -> Result<String, ExecuteError> {
    match result {
        Ok(text) => Ok(text),
        Err(error) if error.is_retry() => Err(ExecuteError::RetryRequested {
            name: name.to_owned(),
            message: error.message().to_owned(),
        }),
        Err(error) if error.is_invalid_arguments() => Err(ExecuteError::InvalidArguments {
            name: name.to_owned(),
            message: strip_invalid_prefix(name, error.message()).to_owned(),
        }),
        Err(error) => Err(ExecuteError::Failed {
            name: name.to_owned(),
            error,
        }),
    }
}

/// Narrowing errors already say `invalid arguments for {name}: `; keep the model string from
/// saying it twice.
fn strip_invalid_prefix<'a>(name: &str, message: &'a str) -> &'a str {
    message
        .strip_prefix("invalid arguments for ")
        .and_then(|rest| rest.strip_prefix(name))
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
