//! `read_file` and `write_file`: confined to the calling chat's root directory (see
//! [`confined`](super::confined) for what that guarantees), size-limited, encoding-aware, and
//! atomic on write.

use std::sync::{
    Arc, OnceLock,
    atomic::{AtomicBool, Ordering},
};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

use super::confined::{self, RootedPath};
use crate::{
    __private,
    call::CallContext,
    context::ToolContext,
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file to read, relative to the working directory.
    #[schemars(example = "notes.txt")]
    pub path: String,
    /// The text encoding: `utf-8` (default), `ascii`, `latin1`, `utf-16le`, `utf-16be`,
    /// `base64`, `hex`, or any WHATWG encoding label (`windows-1252`, `shift_jis`, …).
    #[serde(default)]
    pub encoding: Option<String>,
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to write, relative to the working directory; parent directories are created.
    pub path: String,
    /// The text to write (UTF-8).
    pub content: String,
}

/// The built-in `read_file` tool: reads a regular file under the root directory of the chat
/// that calls it.
///
/// * The root is that of the calling chat's context ([`CallContext::conversation`]), so a
///   registry shared by agents with different roots reads in each one's; the context the tool
///   was made with applies to calls that come without one (a registry's plain `execute`, an
///   MCP client).
/// * The path is relative to the root (an absolute path must lie under it), and `..` cannot
///   climb out.
/// * **No symbolic link is followed** below the root, not even one that stays inside it: each
///   directory is opened relative to the one before it, so a link swapped in while the call
///   runs is refused too.
/// * Only regular files are read: a pipe, socket or device is refused without being opened.
/// * At most [`ToolContext::max_read_bytes`] are read (1 MiB by default); a larger file is an
///   error.
#[derive(Clone, Debug)]
pub struct ReadFile {
    context: ToolContext,
}

impl ReadFile {
    /// A `read_file` tool confined to `context.root_dir()` when a call brings no context of
    /// its own.
    pub fn new(context: ToolContext) -> Self {
        Self { context }
    }
}

/// The built-in `write_file` tool: writes a file under the root directory of the chat that calls
/// it, atomically.
///
/// The root and path rules are those of [`ReadFile`]: no symbolic link is followed below the
/// root, and an existing entry must be a regular file. Missing parent directories are
/// created. The text goes to a temporary file in the target's directory, which is then renamed
/// over the target, so a reader sees the old file or the new one; a replaced file keeps its
/// permissions, a new one is readable and writable by its owner only.
#[derive(Clone, Debug)]
pub struct WriteFile {
    context: ToolContext,
}

impl WriteFile {
    /// A `write_file` tool confined to `context.root_dir()` when a call brings no context of
    /// its own.
    pub fn new(context: ToolContext) -> Self {
        Self { context }
    }
}

#[async_trait::async_trait]
impl ExecutableTool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn get_schema(&self) -> ChatTool {
        static SCHEMA: OnceLock<ChatTool> = OnceLock::new();
        __private::chat_tool(
            &SCHEMA,
            "read_file",
            &["Read a text file and return its contents."],
            __private::schema_for::<ReadFileArgs>,
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Read file")
            .category("files")
            .read_only(true)
            .open_world(false)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        read(self.context.clone(), args).await
    }

    /// Reads under the root directory of the chat that made the call, whichever registry this
    /// tool sits in; under its own context's when the call comes with none.
    async fn execute_with(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        read(call.conversation().unwrap_or(&self.context).clone(), args).await
    }
}

#[async_trait::async_trait]
impl ExecutableTool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn get_schema(&self) -> ChatTool {
        static SCHEMA: OnceLock<ChatTool> = OnceLock::new();
        __private::chat_tool(
            &SCHEMA,
            "write_file",
            &["Write text to a file, replacing it if it exists."],
            __private::schema_for::<WriteFileArgs>,
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Write file")
            .category("files")
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(false)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        write(self.context.clone(), args).await
    }

    /// Writes under the root directory of the chat that made the call, whichever registry this
    /// tool sits in; under its own context's when the call comes with none.
    async fn execute_with(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        write(call.conversation().unwrap_or(&self.context).clone(), args).await
    }
}

/// `read_file` under `context`'s root directory.
async fn read(context: ToolContext, args: JsonObject) -> Result<String, ToolError> {
    let args: ReadFileArgs = __private::narrow("read_file", args)?;
    let encoding = Encoding::parse(args.encoding.as_deref())?;
    let requested = args.path.clone();
    let bytes = off_the_runtime(move |abandoned| {
        let root = context.root_dir();
        let path = RootedPath::parse(root, &requested)?;
        confined::read(root, &path, context.max_read_bytes(), abandoned)
    })
    .await?;
    encoding.decode(&bytes, &args.path)
}

/// `write_file` under `context`'s root directory.
async fn write(context: ToolContext, args: JsonObject) -> Result<String, ToolError> {
    let args: WriteFileArgs = __private::narrow("write_file", args)?;
    let bytes = args.content.len();
    let requested = args.path.clone();
    off_the_runtime(move |_| {
        let root = context.root_dir();
        let path = RootedPath::parse(root, &requested)?;
        confined::write(root, &path, args.content.as_bytes())
    })
    .await?;
    Ok(format!("Successfully wrote {bytes} bytes to {}", args.path))
}

/// Runs blocking file work on tokio's blocking threads. When the call is dropped (its timeout
/// passed, or its turn was cancelled), `work`'s flag is set, and long reads stop at their next
/// chunk, so a call that timed out never keeps a thread.
async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce(&AtomicBool) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    /// Sets the flag when the call's future is dropped, finished or not.
    struct Abandon(Arc<AtomicBool>);

    impl Drop for Abandon {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    let abandon = Abandon(Arc::new(AtomicBool::new(false)));
    let flag = abandon.0.clone();
    tokio::task::spawn_blocking(move || work(&flag))
        .await
        .unwrap_or_else(|error| {
            Err(ToolError::new(format!(
                "the file operation failed: {error}"
            )))
        })
}

/// The encodings `read_file` accepts.
enum Encoding {
    Text(&'static encoding_rs::Encoding),
    Ascii,
    Base64,
    Hex,
}

impl Encoding {
    fn parse(label: Option<&str>) -> Result<Self, ToolError> {
        let Some(label) = label.map(str::trim).filter(|label| !label.is_empty()) else {
            return Ok(Self::Text(encoding_rs::UTF_8));
        };
        let lower = label.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "utf8" | "utf-8" => Self::Text(encoding_rs::UTF_8),
            "ascii" | "us-ascii" => Self::Ascii,
            "latin1" | "latin-1" | "binary" | "iso-8859-1" => Self::Text(encoding_rs::WINDOWS_1252),
            "utf16le" | "utf-16le" | "ucs2" | "ucs-2" | "utf-16" => {
                Self::Text(encoding_rs::UTF_16LE)
            }
            "utf16be" | "utf-16be" => Self::Text(encoding_rs::UTF_16BE),
            "base64" => Self::Base64,
            "hex" => Self::Hex,
            _ => match encoding_rs::Encoding::for_label(lower.as_bytes()) {
                Some(encoding) => Self::Text(encoding),
                None => {
                    return Err(ToolError::new(format!(
                        "unknown encoding '{label}'; use utf-8, ascii, latin1, utf-16le, \
                         utf-16be, base64, hex or a WHATWG encoding label such as windows-1252"
                    )));
                }
            },
        })
    }

    fn decode(&self, bytes: &[u8], path: &str) -> Result<String, ToolError> {
        match self {
            Self::Text(encoding) => {
                let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
                if had_errors && *encoding == encoding_rs::UTF_8 {
                    return Err(ToolError::new(format!(
                        "'{path}' is not valid UTF-8; pass an `encoding` such as latin1 or base64"
                    )));
                }
                let text = text.into_owned();
                Ok(text
                    .strip_prefix('\u{feff}')
                    .map(str::to_owned)
                    .unwrap_or(text))
            }
            Self::Ascii => Ok(bytes.iter().map(|byte| char::from(byte & 0x7f)).collect()),
            Self::Base64 => Ok(base64::engine::general_purpose::STANDARD.encode(bytes)),
            Self::Hex => {
                use std::fmt::Write as _;
                let mut text = String::with_capacity(bytes.len() * 2);
                for byte in bytes {
                    // Writing to a `String` cannot fail.
                    let _ = write!(text, "{byte:02x}");
                }
                Ok(text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_encodings_are_named_in_the_error() {
        let Err(error) = Encoding::parse(Some("klingon")) else {
            panic!("klingon is not an encoding");
        };
        assert_eq!(
            error.message(),
            "unknown encoding 'klingon'; use utf-8, ascii, latin1, utf-16le, utf-16be, base64, \
             hex or a WHATWG encoding label such as windows-1252"
        );
    }
}
