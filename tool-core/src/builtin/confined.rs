//! The file tools' security boundary: a path a model gave, resolved under the root directory
//! without following any symbolic link, and the file opened there.
//!
//! [`RootedPath::parse`] checks the text: a relative path (or an absolute one under the root)
//! whose `..` never climbs out. [`read`] and [`write`] then walk it from the root one component
//! at a time, each directory opened relative to the one before with `O_NOFOLLOW`, and open the
//! file relative to the last one. So a symbolic link anywhere below the root is refused, and a
//! directory swapped for a link while a call runs cannot redirect it: what was checked is what
//! is used. Only regular files are read (never a pipe, socket or device, which are not even
//! opened), at most the read limit plus one byte of them, and a write creates its temporary
//! file and renames it inside the directory that was walked. Refusing every link also makes
//! the lexical `..` exact: no link can make `a/..` mean anything but the directory it names.
//!
//! The root itself is the application's choice and may be reached through links. On platforms
//! other than Unix each component is checked by its path before it is used, which a concurrent
//! swap can race.

use std::{
    ffi::OsString,
    io::{self, Read as _},
    path::{Component, Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
};

use crate::tool::ToolError;

/// A path a model gave, checked lexically: its normal components under the root, at least one.
#[derive(Clone, Debug)]
pub(super) struct RootedPath {
    /// The text the model sent, for messages.
    requested: String,
    /// The components, without `.` and with `..` applied.
    parts: Vec<OsString>,
}

impl RootedPath {
    /// Checks `requested`: relative (or absolute under `root`), and `..` may not climb out.
    pub(super) fn parse(root: &Path, requested: &str) -> Result<Self, ToolError> {
        if requested.trim().is_empty() {
            return Err(ToolError::new("the path is empty"));
        }
        let outside = || {
            ToolError::new(format!(
                "'{requested}' is outside the directory this tool may access; use a path \
                 relative to the working directory"
            ))
        };
        let requested_path = Path::new(requested);
        let relative = if requested_path.is_absolute() {
            let canonical = root.canonicalize().ok();
            requested_path
                .strip_prefix(root)
                .ok()
                .or_else(|| requested_path.strip_prefix(canonical.as_ref()?).ok())
                .ok_or_else(outside)?
        } else {
            requested_path
        };
        let mut parts = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(outside());
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(outside()),
            }
        }
        if parts.is_empty() {
            return Err(ToolError::new(format!(
                "'{requested}' names a directory, not a file"
            )));
        }
        Ok(Self {
            requested: requested.to_owned(),
            parts,
        })
    }

    /// The last component and those before it.
    fn split_last(&self) -> Result<(&OsString, &[OsString]), ToolError> {
        // `parse` makes no path without components; this is its message, should one appear.
        self.parts.split_last().ok_or_else(|| {
            ToolError::new(format!(
                "'{}' names a directory, not a file",
                self.requested
            ))
        })
    }

    /// The first `count` components, joined, as the model would write them.
    fn prefix(&self, count: usize) -> String {
        self.parts[..count]
            .iter()
            .collect::<PathBuf>()
            .display()
            .to_string()
    }

    /// The refusal of a link found at the `count`-th component.
    fn link_at(&self, count: usize) -> ToolError {
        let requested = &self.requested;
        if count == self.parts.len() {
            ToolError::new(format!(
                "'{requested}' is a symbolic link; the file tools do not follow symbolic links"
            ))
        } else {
            ToolError::new(format!(
                "'{requested}' goes through the symbolic link '{}'; the file tools do not \
                 follow symbolic links",
                self.prefix(count)
            ))
        }
    }

    /// The refusal of a component before the last that is not a directory.
    fn not_a_directory(&self, verb: &str, count: usize) -> ToolError {
        ToolError::new(format!(
            "cannot {verb} '{}': '{}' is not a directory",
            self.requested,
            self.prefix(count)
        ))
    }

    /// Checks the kind of the entry the path names: only a regular file passes.
    fn check_kind(&self, kind: Kind) -> Result<(), ToolError> {
        let requested = &self.requested;
        match kind {
            Kind::Regular => Ok(()),
            Kind::Directory => Err(ToolError::new(format!(
                "'{requested}' is a directory, not a file"
            ))),
            Kind::Link => Err(self.link_at(self.parts.len())),
            Kind::Other(what) => Err(ToolError::new(format!(
                "'{requested}' is {what}, not a regular file"
            ))),
        }
    }

    fn io_error(&self, verb: &str, error: &io::Error) -> ToolError {
        let reason = match error.kind() {
            io::ErrorKind::NotFound => "no such file or directory".to_owned(),
            io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
            _ => error.to_string(),
        };
        ToolError::new(format!("cannot {verb} '{}': {reason}", self.requested))
    }
}

/// What a directory entry is, as far as the file tools care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Regular,
    Directory,
    Link,
    /// Anything else: a pipe, socket or device, named for messages.
    Other(&'static str),
}

/// Reads the regular file `path` names under `root`: at most `limit` bytes, or an error saying
/// it is larger. Stops early, with an error nobody sees, once `abandoned` is set (the call was
/// dropped).
pub(super) fn read(
    root: &Path,
    path: &RootedPath,
    limit: u64,
    abandoned: &AtomicBool,
) -> Result<Vec<u8>, ToolError> {
    let file = platform::open_regular(root, path)?;
    let size = file
        .metadata()
        .map_err(|error| path.io_error("read", &error))?
        .len();
    let requested = &path.requested;
    if size > limit {
        return Err(ToolError::new(format!(
            "'{requested}' is {size} bytes, more than the read limit of {limit} bytes"
        )));
    }
    // The size was checked, but a file can grow: read one byte past the limit at most.
    let cap = limit.saturating_add(1);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    let mut chunk = vec![0; 64 * 1024];
    let mut file = file;
    loop {
        if abandoned.load(Ordering::Relaxed) {
            return Err(ToolError::new("the read was abandoned"));
        }
        let wanted = cap.saturating_sub(bytes.len() as u64);
        let wanted = usize::try_from(wanted).map_or(chunk.len(), |wanted| wanted.min(chunk.len()));
        if wanted == 0 {
            break;
        }
        match file.read(&mut chunk[..wanted]) {
            Ok(0) => break,
            Ok(read) => bytes.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(path.io_error("read", &error)),
        }
    }
    if bytes.len() as u64 > limit {
        return Err(ToolError::new(format!(
            "'{requested}' grew past the read limit of {limit} bytes while being read"
        )));
    }
    Ok(bytes)
}

/// Writes `bytes` to the file `path` names under `root`, atomically, creating missing parent
/// directories. An existing entry must be a regular file.
pub(super) fn write(root: &Path, path: &RootedPath, bytes: &[u8]) -> Result<(), ToolError> {
    platform::write(root, path, bytes)
}

fn root_error(root: &Path, error: &io::Error) -> ToolError {
    ToolError::new(format!(
        "the tool's root directory {} is not accessible: {error}",
        root.display()
    ))
}

#[cfg(unix)]
mod platform {
    //! The walk with directory handles: `openat` with `O_NOFOLLOW` at every component.

    use std::{ffi::OsStr, fs::File, os::fd::OwnedFd, path::Path};

    use rustix::{
        fs::{AtFlags, CWD, FileType, Mode, OFlags, fstat, mkdirat, openat, statat},
        io::Errno,
    };

    use super::{Kind, RootedPath, root_error};
    use crate::{builtin::atomic::unix::replace_in, tool::ToolError};

    const DIRECTORY: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    pub(super) fn open_regular(root: &Path, path: &RootedPath) -> Result<File, ToolError> {
        let (dir, name) = walk(root, path, "read", false)?;
        // Looked at before opening, so that no pipe or device is ever opened (opening one can
        // block or have effects); the handle is checked again below, since the entry may
        // change in between.
        let stat = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| path.io_error("read", &errno.into()))?;
        path.check_kind(kind(FileType::from_raw_mode(stat.st_mode)))?;
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let file = openat(&dir, name, flags, Mode::empty())
            .map_err(|errno| explain(&dir, name, path, path.parts.len(), "read", errno))?;
        let stat = fstat(&file).map_err(|errno| path.io_error("read", &errno.into()))?;
        path.check_kind(kind(FileType::from_raw_mode(stat.st_mode)))?;
        Ok(File::from(file))
    }

    pub(super) fn write(root: &Path, path: &RootedPath, bytes: &[u8]) -> Result<(), ToolError> {
        let (dir, name) = walk(root, path, "write", true)?;
        match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => path.check_kind(kind(FileType::from_raw_mode(stat.st_mode)))?,
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(path.io_error("write", &errno.into())),
        }
        // The rename replaces whatever entry has the name by then, never following it.
        replace_in(&dir, name, bytes).map_err(|error| path.io_error("write", &error))
    }

    /// Opens the directory that holds the last component, from the root, one component at a
    /// time and following no link; with `create`, makes missing directories. Returns it with
    /// the last component.
    fn walk<'a>(
        root: &Path,
        path: &'a RootedPath,
        verb: &str,
        create: bool,
    ) -> Result<(OwnedFd, &'a OsStr), ToolError> {
        let mut dir = openat(
            CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| root_error(root, &errno.into()))?;
        let (name, parents) = path.split_last()?;
        for (index, part) in parents.iter().enumerate() {
            let opened = match openat(&dir, part, DIRECTORY, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match mkdirat(&dir, part, Mode::RWXU | Mode::RWXG | Mode::RWXO) {
                        Ok(()) | Err(Errno::EXIST) => openat(&dir, part, DIRECTORY, Mode::empty()),
                        Err(errno) => Err(errno),
                    }
                }
                opened => opened,
            };
            dir = opened.map_err(|errno| explain(&dir, part, path, index + 1, verb, errno))?;
        }
        Ok((dir, name))
    }

    /// Why opening the `count`-th component (`name`, in `dir`) failed: a link or a file where
    /// a directory was needed are told apart, since `O_NOFOLLOW`'s own error differs between
    /// systems.
    fn explain(
        dir: &OwnedFd,
        name: &OsStr,
        path: &RootedPath,
        count: usize,
        verb: &str,
        errno: Errno,
    ) -> ToolError {
        let last = count == path.parts.len();
        match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|stat| kind(FileType::from_raw_mode(stat.st_mode)))
        {
            Ok(Kind::Link) => path.link_at(count),
            Ok(Kind::Regular | Kind::Other(_)) if !last => path.not_a_directory(verb, count),
            _ => path.io_error(verb, &errno.into()),
        }
    }

    fn kind(file_type: FileType) -> Kind {
        match file_type {
            FileType::RegularFile => Kind::Regular,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Link,
            FileType::Fifo => Kind::Other("a named pipe"),
            FileType::Socket => Kind::Other("a socket"),
            FileType::CharacterDevice => Kind::Other("a character device"),
            FileType::BlockDevice => Kind::Other("a block device"),
            FileType::Unknown => Kind::Other("of an unknown kind"),
        }
    }
}

#[cfg(not(unix))]
mod platform {
    //! The walk by paths: each component is checked with `symlink_metadata` before it is used.

    use std::{fs::File, path::Path};

    use super::{Kind, RootedPath, root_error};
    use crate::{builtin::atomic::write_atomic_blocking, tool::ToolError};

    pub(super) fn open_regular(root: &Path, path: &RootedPath) -> Result<File, ToolError> {
        let full = walk(root, path, "read", false)?;
        let metadata =
            std::fs::symlink_metadata(&full).map_err(|error| path.io_error("read", &error))?;
        path.check_kind(kind(&metadata))?;
        let file = File::open(&full).map_err(|error| path.io_error("read", &error))?;
        let metadata = file
            .metadata()
            .map_err(|error| path.io_error("read", &error))?;
        path.check_kind(kind(&metadata))?;
        Ok(file)
    }

    pub(super) fn write(root: &Path, path: &RootedPath, bytes: &[u8]) -> Result<(), ToolError> {
        let full = walk(root, path, "write", true)?;
        match std::fs::symlink_metadata(&full) {
            Ok(metadata) => path.check_kind(kind(&metadata))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(path.io_error("write", &error)),
        }
        write_atomic_blocking(&full, bytes).map_err(|error| path.io_error("write", &error))
    }

    /// The full path of the file, after checking that no component before it is a link.
    fn walk(
        root: &Path,
        path: &RootedPath,
        verb: &str,
        create: bool,
    ) -> Result<std::path::PathBuf, ToolError> {
        let mut full = root.to_path_buf();
        std::fs::metadata(&full).map_err(|error| root_error(root, &error))?;
        let (name, parents) = path.split_last()?;
        for (index, part) in parents.iter().enumerate() {
            full.push(part);
            match std::fs::symlink_metadata(&full) {
                Ok(metadata) => match kind(&metadata) {
                    Kind::Directory => {}
                    Kind::Link => return Err(path.link_at(index + 1)),
                    _ => return Err(path.not_a_directory(verb, index + 1)),
                },
                Err(error) if create && error.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(&full).map_err(|error| path.io_error(verb, &error))?;
                }
                Err(error) => return Err(path.io_error(verb, &error)),
            }
        }
        full.push(name);
        Ok(full)
    }

    fn kind(metadata: &std::fs::Metadata) -> Kind {
        let file_type = metadata.file_type();
        if file_type.is_symlink() {
            Kind::Link
        } else if file_type.is_dir() {
            Kind::Directory
        } else if file_type.is_file() {
            Kind::Regular
        } else {
            Kind::Other("not a regular file")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_cannot_climb_out_of_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let refused = |requested: &str| {
            RootedPath::parse(dir.path(), requested)
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
        for path in ["../x.txt", "a/../../x.txt", "/etc/passwd"] {
            assert_eq!(refused(path), outside(path));
        }
        assert_eq!(refused("a/.."), "'a/..' names a directory, not a file");
        assert_eq!(refused(" "), "the path is empty");
        let inside = dir.path().join("b/x.txt").display().to_string();
        for (requested, parts) in [
            ("a/../x.txt", vec!["x.txt"]),
            ("./a/./b", vec!["a", "b"]),
            (inside.as_str(), vec!["b", "x.txt"]),
        ] {
            let path = RootedPath::parse(dir.path(), requested).unwrap();
            assert_eq!(path.parts, parts, "{requested}");
        }
    }
}
