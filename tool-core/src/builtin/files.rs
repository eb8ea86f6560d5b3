//! `read_file` and `write_file`: confined to the context's root directory, size-limited,
//! encoding-aware, and atomic on write.

use std::{
    io::Write as _,
    path::{Component, Path, PathBuf},
    sync::OnceLock,
};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    __private,
    context::ToolContext,
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file to read, relative to the working directory.
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

/// The built-in `read_file` tool: reads a text file under the context's root directory.
#[derive(Clone, Debug)]
pub struct ReadFile {
    context: ToolContext,
}

impl ReadFile {
    /// A `read_file` tool confined to `context.root_dir()`.
    pub fn new(context: ToolContext) -> Self {
        Self { context }
    }
}

/// The built-in `write_file` tool: writes a file under the context's root directory, atomically.
#[derive(Clone, Debug)]
pub struct WriteFile {
    context: ToolContext,
}

impl WriteFile {
    /// A `write_file` tool confined to `context.root_dir()`.
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
        SCHEMA
            .get_or_init(|| {
                ChatTool::new(
                    "read_file",
                    "Read a text file and return its contents.",
                    __private::schema_for::<ReadFileArgs>(),
                )
            })
            .clone()
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Read file")
            .category("files")
            .read_only(true)
            .open_world(false)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let args: ReadFileArgs = __private::narrow("read_file", args)?;
        let encoding = Encoding::parse(args.encoding.as_deref())?;
        let path = resolve(self.context.root_dir(), &args.path, Access::Read)?;
        let limit = self.context.max_read_bytes();
        let metadata = tokio::fs::metadata(&path)
            .await
            .map_err(|error| io_error("read", &args.path, &error))?;
        if metadata.is_dir() {
            return Err(ToolError::new(format!(
                "'{}' is a directory, not a file",
                args.path
            )));
        }
        if metadata.len() > limit {
            return Err(ToolError::new(format!(
                "'{}' is {} bytes, more than the read limit of {limit} bytes",
                args.path,
                metadata.len()
            )));
        }
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|error| io_error("read", &args.path, &error))?;
        if bytes.len() as u64 > limit {
            return Err(ToolError::new(format!(
                "'{}' grew past the read limit of {limit} bytes while being read",
                args.path
            )));
        }
        encoding.decode(&bytes, &args.path)
    }
}

#[async_trait::async_trait]
impl ExecutableTool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn get_schema(&self) -> ChatTool {
        static SCHEMA: OnceLock<ChatTool> = OnceLock::new();
        SCHEMA
            .get_or_init(|| {
                ChatTool::new(
                    "write_file",
                    "Write text to a file, replacing it if it exists.",
                    __private::schema_for::<WriteFileArgs>(),
                )
            })
            .clone()
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
        let args: WriteFileArgs = __private::narrow("write_file", args)?;
        let path = resolve(self.context.root_dir(), &args.path, Access::Write)?;
        let bytes = args.content.len();
        write_atomic(path, args.content.into_bytes())
            .await
            .map_err(|error| io_error("write", &args.path, &error))?;
        Ok(format!("Successfully wrote {bytes} bytes to {}", args.path))
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over the target. Parent directories are created. A failure leaves any previous
/// file untouched and no temporary file behind.
pub(crate) async fn write_atomic(path: PathBuf, bytes: Vec<u8>) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || write_atomic_blocking(&path, &bytes))
        .await
        .map_err(std::io::Error::other)?
}

/// The blocking form of [`write_atomic`].
pub(crate) fn write_atomic_blocking(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let mut file = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(parent)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    // Make the rename itself durable where the platform allows opening a directory.
    if let Ok(dir) = std::fs::File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// Resolves a path the model gave to a path under `root`, refusing `..` that climbs out,
/// absolute paths elsewhere, and symlinks that lead outside.
fn resolve(root: &Path, requested: &str, access: Access) -> Result<PathBuf, ToolError> {
    if requested.trim().is_empty() {
        return Err(ToolError::new("the path is empty"));
    }
    let outside = || {
        ToolError::new(format!(
            "'{requested}' is outside the directory this tool may access; use a path relative to \
             the working directory"
        ))
    };
    let root = root.canonicalize().map_err(|error| {
        ToolError::new(format!(
            "the tool's root directory {} is not accessible: {error}",
            root.display()
        ))
    })?;
    let requested_path = Path::new(requested);
    let relative = if requested_path.is_absolute() {
        requested_path.strip_prefix(&root).map_err(|_| outside())?
    } else {
        requested_path
    };
    let mut normalized = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => normalized.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !normalized.pop() {
                    return Err(outside());
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    if normalized.as_os_str().is_empty() {
        return Err(ToolError::new(format!(
            "'{requested}' names a directory, not a file"
        )));
    }
    let full = root.join(&normalized);
    // Symlinks: the deepest existing ancestor (or the file itself) must resolve inside the root.
    let mut existing = full.as_path();
    loop {
        match existing.canonicalize() {
            Ok(real) => {
                if !real.starts_with(&root) {
                    return Err(outside());
                }
                break;
            }
            Err(_) => match existing.parent() {
                Some(parent) => existing = parent,
                None => return Err(outside()),
            },
        }
    }
    if access == Access::Write {
        if let Ok(metadata) = std::fs::symlink_metadata(&full) {
            if metadata.file_type().is_symlink() && full.canonicalize().is_err() {
                // A dangling symlink could point anywhere once its target is created.
                return Err(outside());
            }
        }
    }
    Ok(full)
}

fn io_error(verb: &str, path: &str, error: &std::io::Error) -> ToolError {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    };
    ToolError::new(format!("cannot {verb} '{path}': {reason}"))
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
    fn dot_dot_cannot_climb_out_of_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let refused = |requested: &str, access| {
            resolve(dir.path(), requested, access)
                .unwrap_err()
                .message()
                .to_owned()
        };
        let outside = |requested: &str| {
            format!(
                "'{requested}' is outside the directory this tool may access; use a path \
                 relative to the working directory"
            )
        };
        assert_eq!(refused("../x.txt", Access::Read), outside("../x.txt"));
        assert_eq!(
            refused("a/../../x.txt", Access::Write),
            outside("a/../../x.txt")
        );
        assert_eq!(refused("/etc/passwd", Access::Read), outside("/etc/passwd"));
        assert_eq!(
            resolve(dir.path(), "a/../x.txt", Access::Write).unwrap(),
            dir.path().canonicalize().unwrap().join("x.txt")
        );
    }

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
