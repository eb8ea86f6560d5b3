//! [`Usage`]: token counts of model calls, in one meaning whatever the provider.

use serde::{Deserialize, Serialize};

/// Token counts of one model call (or, summed with `+`, of several).
///
/// Every provider is normalised to one meaning, so counts from different providers compare
/// and add up:
///
/// - [`input_tokens`](Self::input_tokens) is every prompt token the model processed, the ones
///   read from or written to a prompt cache included. OpenAI's `prompt_tokens` and Gemini's
///   `promptTokenCount` already mean that; Anthropic's `input_tokens` is only the uncached
///   part, so its `cache_read_input_tokens` and `cache_creation_input_tokens` are added in.
/// - [`cache_read_tokens`](Self::cache_read_tokens) and
///   [`cache_write_tokens`](Self::cache_write_tokens) are the parts of `input_tokens` read from
///   and written to the provider's prompt cache.
/// - [`output_tokens`](Self::output_tokens) is every token generated, reasoning included (what
///   the providers bill as output). OpenAI's `completion_tokens` and Anthropic's
///   `output_tokens` already include reasoning; Gemini's `thoughtsTokenCount` is added to its
///   `candidatesTokenCount`.
/// - [`reasoning_tokens`](Self::reasoning_tokens) is the part of `output_tokens` spent on
///   reasoning.
///
/// A breakdown the provider does not report is 0. Ollama reports only `prompt_eval_count` (the
/// whole prompt, the part reused from its cache included) and `eval_count` (the tokens
/// generated, thinking included).
///
/// ```
/// use tool_core::message::Usage;
///
/// // Anthropic: 2 uncached input tokens, 400 read from the cache, 10 written to it.
/// let step = Usage::new(412, 30).cache_read_tokens(400).cache_write_tokens(10);
/// assert_eq!(step.total_input_tokens(), 412);
/// assert_eq!(step.uncached_input_tokens(), 2);
/// let turn = step + Usage::new(500, 20).cache_read_tokens(410);
/// assert_eq!(turn.total_input_tokens(), 912);
/// assert_eq!(turn.cache_read_tokens, 810);
/// assert_eq!(turn.total_tokens(), 962);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Every prompt token processed, cached ones included.
    pub input_tokens: u64,
    /// Every token generated, reasoning included.
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the prompt cache (Anthropic reports it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` spent on reasoning (OpenAI reasoning models, Gemini
    /// thinking).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Token counts: every prompt token processed, and every token generated.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Sets how many of the input tokens were read from the prompt cache.
    #[must_use]
    pub fn cache_read_tokens(mut self, tokens: u64) -> Self {
        self.cache_read_tokens = tokens;
        self
    }

    /// Sets how many of the input tokens were written to the prompt cache.
    #[must_use]
    pub fn cache_write_tokens(mut self, tokens: u64) -> Self {
        self.cache_write_tokens = tokens;
        self
    }

    /// Sets how many of the output tokens were spent on reasoning.
    #[must_use]
    pub fn reasoning_tokens(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// Every prompt token the model processed, whatever the provider and whether or not it
    /// came from a cache (the same as [`input_tokens`](Self::input_tokens), which every
    /// client normalises to this meaning).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
    }

    /// The prompt tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Input and output tokens together.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl std::ops::Add for Usage {
    type Output = Self;

    fn add(mut self, other: Self) -> Self {
        self += other;
        self
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        // Saturating: counts from a misbehaving server must not panic in debug builds.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |total, usage| total + usage)
    }
}

// serde's `skip_serializing_if` hands over a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(count: &u64) -> bool {
    *count == 0
}
