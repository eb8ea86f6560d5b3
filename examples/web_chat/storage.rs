//! The data folder is private to the user who runs the server: its folders are made `0700`, its
//! files `0600`, and a folder that belongs to someone else (made beforehand in a shared place
//! such as the system's temporary folder) is never used.

use std::{fmt, io, path::Path};

/// Why a folder cannot be used.
#[derive(Debug)]
pub(crate) enum FolderError {
    /// It, or the symbolic link in its place, belongs to another user.
    Foreign { uid: u32 },
    /// Something other than a folder is there.
    NotAFolder,
    /// It could not be made, read or narrowed.
    Io(io::Error),
}

impl fmt::Display for FolderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Foreign { uid } => write!(f, "it belongs to another user (uid {uid})"),
            Self::NotAFolder => f.write_str("it is not a folder"),
            Self::Io(error) => error.fmt(f),
        }
    }
}

impl From<io::Error> for FolderError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// Makes `dir` a folder only this user can open. A missing one is made (with its missing
/// parents) `0700`; one that is there must belong to this user, and is narrowed to `0700`.
/// What it guarantees: on `Ok`, `dir` is a folder of this user's that no one else can list or
/// enter; on `Err`, nothing was written in it.
pub(crate) fn private_folder(dir: &Path) -> Result<(), FolderError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};

        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700);
        if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            builder.recursive(true).create(parent)?;
        }
        match builder.recursive(false).create(dir) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error.into()),
        }
        let me = rustix::process::geteuid().as_raw();
        // A link someone else planted is refused even when it points at a folder of ours.
        let link = std::fs::symlink_metadata(dir)?;
        if link.uid() != me {
            return Err(FolderError::Foreign { uid: link.uid() });
        }
        let folder = std::fs::metadata(dir)?;
        if !folder.is_dir() {
            return Err(FolderError::NotAFolder);
        }
        if folder.uid() != me {
            return Err(FolderError::Foreign { uid: folder.uid() });
        }
        if folder.permissions().mode() & 0o777 != 0o700 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)?;
        if std::fs::metadata(dir)?.is_dir() {
            Ok(())
        } else {
            Err(FolderError::NotAFolder)
        }
    }
}

/// Makes `path` a new file holding `bytes`, readable and writable by this user only; fails when
/// something is there already.
pub(crate) fn create_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes sure `path` is a file only this user can read and write: an empty one when it is
/// missing (SQLite takes an empty file as a new database, and gives its journal the same
/// permissions), narrowed to `0600` when it is there.
pub(crate) fn private_file(path: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if file.metadata()?.permissions().mode() & 0o777 != 0o600 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    drop(file);
    Ok(())
}

/// Writes `bytes` to a new private file beside `path`, syncs it and renames it over `path`, so a
/// crash leaves either the old file or the new one, never half of one.
pub(crate) async fn write_private_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    // A leftover of a crash would keep its permissions; a new file gets ours.
    match tokio::fs::remove_file(&temporary).await {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(&temporary).await?;
    file.write_all(bytes).await?;
    file.sync_all().await?;
    drop(file);
    tokio::fs::rename(&temporary, path).await
}
