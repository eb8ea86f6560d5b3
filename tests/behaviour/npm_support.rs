//! npm packages the MCP tests need (the reference server, the TypeScript SDK), installed once
//! under the target folder when the environment does not point at an installed copy.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// What a test needs from npm.
pub(crate) struct NpmPackage {
    /// What the tests are called in the skip message, e.g. `the server-everything tests`.
    pub(crate) tests: &'static str,
    /// `name@version`, as `npm install` takes it.
    pub(crate) spec: &'static str,
    /// The variable that points at an installed copy (set by `.ci/run`).
    pub(crate) env: &'static str,
    /// The path the tests use, relative to the install prefix.
    pub(crate) path: &'static str,
    /// Whether a path is the package the tests need (the right file, the right version).
    pub(crate) ready: fn(&Path) -> bool,
}

impl NpmPackage {
    /// The package's path, installed if needed, or `None` after saying the tests are skipped
    /// (see [`crate::real_parts`]).
    pub(crate) fn find(&self) -> Option<PathBuf> {
        match self.find_or_install() {
            Ok(path) => Some(path),
            Err(why) => {
                crate::real_parts::skip(&format!(
                    "SKIPPED: {} cannot install {}: {why}",
                    self.tests, self.spec
                ));
                None
            }
        }
    }

    fn find_or_install(&self) -> Result<PathBuf, String> {
        if let Some(path) = std::env::var_os(self.env) {
            let path = PathBuf::from(path);
            assert!(
                (self.ready)(&path),
                "{}={} is not an installed {}",
                self.env,
                path.display(),
                self.spec
            );
            return Ok(path);
        }
        let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-node");
        let path = prefix.join(self.path);
        if (self.ready)(&path) {
            return Ok(path);
        }
        install_npm()?;
        eprintln!("installing {} under {}", self.spec, prefix.display());
        if !runs(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&prefix)
                .arg(self.spec),
        ) || !(self.ready)(&path)
        {
            return Err(format!("npm install --prefix {} failed", prefix.display()));
        }
        Ok(path)
    }
}

/// Node and npm, from Debian's packages when they are missing and we are root.
fn install_npm() -> Result<(), String> {
    if runs(Command::new("npm").arg("--version")) {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
    if !root {
        return Err("npm is not installed and we are not root to install it".to_owned());
    }
    eprintln!("installing nodejs and npm with apt-get");
    let _ = runs(Command::new("apt-get").arg("update").arg("-qq"));
    if runs(Command::new("apt-get").args(["install", "-y", "-qq", "nodejs", "npm"])) {
        Ok(())
    } else {
        Err("apt-get install nodejs npm failed".to_owned())
    }
}

/// Whether `command` ran and succeeded (its output is not kept).
pub(crate) fn runs(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
