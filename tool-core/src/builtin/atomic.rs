//! Atomic file replacement: a temporary file in the same directory, flushed to disk, then
//! renamed over the target, so a reader or a crash sees the old file or the new one.

use std::{
    io,
    path::{Path, PathBuf},
};

/// Writes `bytes` to `path` atomically (see [`write_atomic_blocking`]).
pub(crate) async fn write_atomic(path: PathBuf, bytes: Vec<u8>) -> io::Result<()> {
    tokio::task::spawn_blocking(move || write_atomic_blocking(&path, &bytes))
        .await
        .map_err(io::Error::other)?
}

/// Writes `bytes` to `path`, a path the application chose (not a model), atomically. Parent
/// directories are created. A failure leaves any previous file untouched and no temporary
/// file behind. A replaced file keeps its permissions; a new one is readable and writable by
/// its owner only.
pub(crate) fn write_atomic_blocking(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    std::fs::create_dir_all(parent)?;
    #[cfg(unix)]
    {
        let dir = rustix::fs::openat(
            rustix::fs::CWD,
            parent,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        unix::replace_in(&dir, name, bytes)
    }
    #[cfg(not(unix))]
    {
        use std::io::Write as _;

        let _ = name;
        let mut file = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(parent)?;
        file.write_all(bytes)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|error| error.error)?;
        Ok(())
    }
}

#[cfg(unix)]
pub(super) mod unix {
    //! The replacement itself, relative to an open directory, so that the temporary file and
    //! the rename stay in the directory that was opened whatever happens to its path.

    use std::{
        ffi::OsStr,
        fs::File,
        io::{self, Write as _},
        os::fd::OwnedFd,
        sync::atomic::{AtomicU64, Ordering},
    };

    use rustix::{
        fs::{AtFlags, FileType, Mode, OFlags, fchmod, fsync, openat, renameat, statat, unlinkat},
        io::Errno,
    };

    /// Replaces (or creates) the file `name` of `dir` with `bytes`: a temporary `.tmp-…` file
    /// in `dir`, flushed, then renamed over `name`. A link named `name` is replaced, never
    /// followed.
    pub(crate) fn replace_in(dir: &OwnedFd, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
        let owner_only = Mode::RUSR | Mode::WUSR;
        let mode = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                Mode::from_raw_mode(stat.st_mode) & (Mode::RWXU | Mode::RWXG | Mode::RWXO)
            }
            _ => owner_only,
        };
        let (temporary, mut file) = create_temporary(dir, owner_only)?;
        let written = (|| -> io::Result<()> {
            file.write_all(bytes)?;
            if mode != owner_only {
                fchmod(&file, mode)?;
            }
            file.sync_all()?;
            renameat(dir, temporary.as_str(), dir, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = unlinkat(dir, temporary.as_str(), AtFlags::empty());
        }
        written?;
        // Make the rename itself durable; some file systems cannot sync a directory.
        let _ = fsync(dir);
        Ok(())
    }

    /// A new file in `dir` whose name starts with `.tmp-`, created exclusively (never an
    /// existing file, never through a link).
    fn create_temporary(dir: &OwnedFd, mode: Mode) -> io::Result<(String, File)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or_default();
        for _ in 0..64 {
            let name = format!(
                ".tmp-{}-{nanos:x}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            );
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match openat(dir, name.as_str(), flags, mode) {
                Ok(fd) => return Ok((name, File::from(fd))),
                Err(Errno::EXIST) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free name for a temporary file",
        ))
    }
}
