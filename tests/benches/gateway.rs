//! What the gateway costs: a `tools/call` through the `mcp_gateway` program against the same
//! call made directly to its upstream (the `mcp_server` example's `add`), both over loopback
//! streamable HTTP, stateless; beside them the PyPI `mcp-proxy` fronting the same upstream.
//!
//! ```sh
//! nice cargo bench -p tool-tests --bench gateway
//! ```
//!
//! Criterion measures one client's call; then a table gives, for each target, the median and
//! p99 latency at 1 and at 64 concurrent clients, the calls per second at 64, and the CPU time
//! per call of the serving processes and of the clients (user + system time from
//! `/proc/PID/stat`, the counts `getrusage` reports, before and after; the gateway
//! row counts the gateway and its upstream, so the gateway's own share is that row minus the
//! direct one). The table's calls are made in rounds, every target in turn (see [`ROUNDS`]),
//! and lines after it say whether the one-client medians of the floor and the gateway are
//! within 1.2 times the direct one plus 200 µs (the floor's says whether any hop is, on the
//! machine as it was during the run). Last, the time from a switch to `notifications/tools/list_changed`
//! on a `subscriptions/listen` stream: the switch and the stream on one gateway process, and
//! across two gateway processes sharing a PostgreSQL store (when `initdb` and `postgres` are
//! found, as the store tests find them).
//!
//! The peer is the `mcp-proxy` program `TOOL_CORE_MCP_PROXY` names, else the one in
//! `target/mcp-proxy-venv`, which the bench makes with `python3 -m venv` and `pip` when it is
//! missing (the peer is skipped, with a line saying so, when that fails). `mcp-proxy` serves
//! HTTP in front of a stdio server only, so it and a second gateway (`gateway_stdio`) both
//! front the upstream started over stdio: the ratio compares like with like.
//!
//! The floor: `forward_proxy`, a hand-written HTTP hop in front of the same upstream (an axum
//! server, this bench's own program run again, forwarding each POST's body to the upstream with
//! a keep-alive `reqwest` client and its answer back unchanged, no MCP parsing): what any
//! process between client and upstream costs on this machine, where the clients, the hop and
//! the upstream share the cores.
//!
//! With `TOOL_CORE_GATEWAY_BEFORE` naming another build of the `mcp_gateway` program (say, of
//! the commit before a change), it runs beside this one as `gateway_before`, in front of the
//! same upstream with its own store: a change's effect measured in one run. A build that
//! knows `requests_per_minute` gets `TOOL_CORE_GATEWAY_BEFORE_LIMITS="requests_per_minute =
//! 100000000"` too, so that its request limit is not what the bench measures.
//! `TOOL_CORE_GATEWAY_BEFORE_LABEL` names its row otherwise: say, `gateway_deploy` for the
//! program built with the `deploy` profile (`cargo build --profile deploy --example
//! mcp_gateway`, then `target/deploy/examples/mcp_gateway`).

#[path = "../behaviour/store_support.rs"]
#[allow(dead_code)]
mod store_support;
// What `store_support` does when PostgreSQL cannot be had.
#[path = "../behaviour/real_parts.rs"]
mod real_parts;
// The processes it starts and the listen streams it opens, as the behaviour tests do.
#[path = "../behaviour/served.rs"]
mod served;

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::Criterion;
use futures::StreamExt;
use serde_json::json;
use tool_core::gateway::hash_token;

use served::{Served, open_listen};

const UPSTREAM: &str = env!("CARGO_BIN_EXE_mcp_server_example");
const GATEWAY: &str = env!("CARGO_BIN_EXE_mcp_gateway_example");
const ALICE: &str = "alice-token-0123456789";
const ADMIN: &str = "admin-token-abcdef";
const LIMIT: Duration = Duration::from_secs(30);
/// Set to an upstream's URL, this program is the floor proxy in front of it.
const FORWARD_TO: &str = "TOOL_CORE_BENCH_FORWARD_TO";

impl Served {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time (user + system) the process has used so far.
    fn cpu(&self) -> Duration {
        process_cpu(self.pid())
    }
}

fn upstream_http() -> Served {
    let mut command = Command::new(UPSTREAM);
    command.args(["--http", "127.0.0.1:0", "--stateless"]);
    Served::start(command)
}

/// The gateway program with `servers` (TOML) and the store `store`, for user alice, whose
/// limits the bench does not reach.
fn gateway(dir: &Path, store: &str, servers: &str) -> Served {
    let limits = "requests_per_minute = 100000000\n";
    gateway_program(Path::new(GATEWAY), dir, store, limits, servers)
}

/// As [`gateway`], with the gateway program at `program` and `limits` (TOML keys of
/// `[gateway]`, beside the call limits every build knows: a build from before a key was added
/// refuses it).
fn gateway_program(program: &Path, dir: &Path, store: &str, limits: &str, servers: &str) -> Served {
    let text = format!(
        "[gateway]\nstore = {store:?}\nadmin_token_sha256 = \"{admin}\"\nstateless = true\n\
         calls_per_minute = 100000000\nmax_concurrent_calls = 1024\n{limits}\n\
         [[users]]\nname = \"alice\"\ntoken_sha256 = \"{alice}\"\n\n{servers}",
        admin = hash_token(ADMIN),
        alice = hash_token(ALICE),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).unwrap();
    let mut command = Command::new(program);
    command
        .arg("--config")
        .arg(&path)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "error");
    Served::start(command)
}

/// The floor proxy (this program again, see [`forward_proxy_main`]) in front of `upstream`.
fn forward_proxy(upstream: &Served) -> Served {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(FORWARD_TO, &upstream.url);
    Served::start(command)
}

/// The floor proxy's program: serves `POST /mcp` on a free loopback port, sending each body to
/// the upstream at `upstream` with the headers a stateless MCP request needs and answering with
/// the upstream's status, content type and body, unchanged. Two worker threads, like the
/// gateway on this machine.
fn forward_proxy_main(upstream: String) {
    use axum::{
        body::Bytes,
        http::{HeaderMap, StatusCode, header},
        response::IntoResponse,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(128)
            .build()
            .unwrap();
        let forward = move |headers: HeaderMap, body: Bytes| {
            let client = client.clone();
            let upstream = upstream.clone();
            async move {
                let mut request = client.post(upstream).body(body);
                for name in [
                    header::CONTENT_TYPE.as_str(),
                    header::ACCEPT.as_str(),
                    "mcp-protocol-version",
                    "mcp-session-id",
                ] {
                    if let Some(value) = headers.get(name) {
                        request = request.header(name, value);
                    }
                }
                match request.send().await {
                    Ok(response) => {
                        let status = StatusCode::from_u16(response.status().as_u16())
                            .unwrap_or(StatusCode::BAD_GATEWAY);
                        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
                        let body = response.bytes().await.unwrap_or_default();
                        let mut answer = (status, body).into_response();
                        if let Some(content_type) = content_type {
                            answer
                                .headers_mut()
                                .insert(header::CONTENT_TYPE, content_type);
                        }
                        answer
                    }
                    Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
                }
            }
        };
        let app = axum::Router::new().route("/mcp", axum::routing::post(forward));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening on http://{}/mcp", listener.local_addr().unwrap());
        axum::serve(listener, app).await.unwrap();
    });
}

/// The peer's package, the version the README's figures were measured with.
const MCP_PROXY_PACKAGE: &str = "mcp-proxy==0.13.0";

/// The `mcp-proxy` program: `TOOL_CORE_MCP_PROXY`, else the one in `target/mcp-proxy-venv`,
/// which is made (`python3 -m venv`, `pip install`) when it is missing. `None`, said on
/// stdout, when there is no `python3` or the install fails.
fn mcp_proxy() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOOL_CORE_MCP_PROXY") {
        return Some(path.into());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-proxy-venv");
    let program = venv.join("bin/mcp-proxy");
    if program.exists() {
        return Some(program);
    }
    println!("setting up {} with {MCP_PROXY_PACKAGE}", venv.display());
    let made = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&venv)
        .status()
        .is_ok_and(|status| status.success());
    let installed = made
        && Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet", MCP_PROXY_PACKAGE])
            .status()
            .is_ok_and(|status| status.success());
    if !installed || !program.exists() {
        println!(
            "could not install {MCP_PROXY_PACKAGE} into {} (python3 -m venv, then pip)",
            venv.display()
        );
        return None;
    }
    Some(program)
}

/// `mcp-proxy` serving streamable HTTP, stateless, in front of the upstream over stdio.
fn peer(program: &Path) -> Served {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(program)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--stateless",
        ])
        .args(["--", UPSTREAM])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let served = Served {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    let deadline = Instant::now() + LIMIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mcp-proxy did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    served
}

/// User + system CPU time of process `pid` (`/proc/PID/stat`, fields 14 and 15, in clock
/// ticks of 1/100 s).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|field| field.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // After the name, field 3 (state) is index 0: utime (14) is index 11, stime (15) index 12.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// This process's own CPU time: the clients' share (the same counts `getrusage(RUSAGE_SELF)`
/// reports).
fn own_cpu() -> Duration {
    process_cpu(std::process::id())
}

/// What a call sends: a stateless `tools/call` as 2025-06-18 clients send it, which every
/// target here takes.
fn call_body(tool: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"a": 2, "b": 3}},
    })
    .to_string()
}

#[derive(Clone)]
struct Target {
    label: &'static str,
    url: String,
    tool: &'static str,
    client: reqwest::Client,
    body: Arc<str>,
}

impl Target {
    fn new(label: &'static str, url: &str, tool: &'static str) -> Self {
        Self {
            label,
            url: url.to_owned(),
            tool,
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(128)
                .build()
                .unwrap(),
            body: call_body(tool).into(),
        }
    }

    async fn call(&self) {
        let response = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .bearer_auth(ALICE)
            .timeout(LIMIT)
            .body(self.body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(
            status.is_success() && text.contains("\"5\"") && !text.contains("\"isError\":true"),
            "{} {}: {status} {text}",
            self.label,
            self.tool
        );
    }
}

struct Figures {
    median: Duration,
    p99: Duration,
    per_second: f64,
    server_cpu_per_call: Duration,
    client_cpu_per_call: Duration,
}

/// What the rounds of one target measured: every call's latency, and the wall time and the
/// serving processes' and this process's CPU time spent on them.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    elapsed: Duration,
    server_cpu: Duration,
    client_cpu: Duration,
}

impl Samples {
    fn figures(mut self) -> Figures {
        self.latencies.sort();
        let count = self.latencies.len();
        Figures {
            median: self.latencies[count / 2],
            p99: self.latencies[(count * 99 / 100).min(count - 1)],
            per_second: count as f64 / self.elapsed.as_secs_f64(),
            server_cpu_per_call: self.server_cpu / count as u32,
            client_cpu_per_call: self.client_cpu / count as u32,
        }
    }
}

/// One round: `clients` concurrent clients making `calls` calls in all, each timed, added to
/// `samples`.
fn measure(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    servers: &[&Served],
    clients: usize,
    calls: usize,
    samples: &mut Samples,
) {
    // Warm up the connections (and the processes, after the other targets' turns).
    runtime.block_on(async {
        for _ in 0..WARM_UP.div_ceil(clients) {
            let warm: Vec<_> = (0..clients).map(|_| target.call()).collect();
            futures::future::join_all(warm).await;
        }
    });
    let cpu_before: Duration = servers.iter().map(|served| served.cpu()).sum();
    let own_before = own_cpu();
    let started = Instant::now();
    let latencies: Vec<Duration> = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let target = target.clone();
                tokio::spawn(async move {
                    let mut latencies = Vec::with_capacity(calls / clients);
                    for _ in 0..calls / clients {
                        let start = Instant::now();
                        target.call().await;
                        latencies.push(start.elapsed());
                    }
                    latencies
                })
            })
            .collect();
        let mut all = Vec::with_capacity(calls);
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all
    });
    samples.elapsed += started.elapsed();
    let cpu_after: Duration = servers.iter().map(|served| served.cpu()).sum();
    samples.server_cpu += cpu_after - cpu_before;
    samples.client_cpu += own_cpu() - own_before;
    samples.latencies.extend(latencies);
}

/// The table's rounds: each target in turn makes a share of its calls, then the next, so that
/// a slow spell of the machine (the host of this virtual machine lends its cores to others)
/// falls on every target alike rather than on whichever was measured then.
const ROUNDS: usize = 5;
/// Calls made before a round's timed ones (at least one for each client).
const WARM_UP: usize = 20;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default()
}

/// Opens a `subscriptions/listen` stream on `url` as alice, switches `tool` off (then on, by
/// `switch_url`'s admin API) and times the switch to the stream's `list_changed`.
async fn propagation(
    listen_url: &str,
    switch_base: &str,
    tool: &str,
    rounds: usize,
) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let response = open_listen(&client, listen_url, ALICE).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    // Anything the stream sends first (an acknowledgement) is read before the first switch.
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while let Some(Ok(bytes)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    })
    .await;
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        seen.clear();
        let enabled = round % 2 == 1;
        let start = Instant::now();
        let answer = client
            .put(format!("{switch_base}/admin/users/alice/tools/{tool}"))
            .bearer_auth(ADMIN)
            .json(&json!({"enabled": enabled}))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{}", answer.status());
        tokio::time::timeout(LIMIT, async {
            while !seen.contains("notifications/tools/list_changed") {
                let bytes = stream.next().await.unwrap().unwrap();
                seen.push_str(&String::from_utf8_lossy(&bytes));
            }
        })
        .await
        .expect("no list_changed on the stream");
        times.push(start.elapsed());
    }
    times.sort();
    times
}

/// Switches `up_divide_integers` off for alice on `gateway`, through the admin API.
async fn switch_one_off(gateway: &Served) {
    let answer = reqwest::Client::new()
        .put(format!(
            "{}/admin/users/alice/tools/up_divide_integers",
            gateway.url.trim_end_matches("/mcp")
        ))
        .bearer_auth(ADMIN)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
}

fn micros(duration: Duration) -> String {
    format!("{:.0} µs", duration.as_secs_f64() * 1e6)
}

fn main() {
    // reqwest is built without a crypto provider of its own (see `tests/behaviour/http_client.rs`).
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Ok(upstream) = std::env::var(FORWARD_TO) {
        forward_proxy_main(upstream);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("load average at start: {}", load().trim());

    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream_http();
    let servers = format!(
        "[[servers]]\nname = \"up\"\nprefix = \"up\"\nurl = {:?}\n",
        upstream.url
    );
    let store = format!("sqlite://{}", dir.path().join("switches.db").display());
    let through = gateway(dir.path(), &store, &servers);
    let floor = forward_proxy(&upstream);
    // Alice has switches of her own, so every call checks a stored set.
    runtime.block_on(switch_one_off(&through));
    let before_dir = tempfile::tempdir().unwrap();
    let before_label: &'static str = std::env::var("TOOL_CORE_GATEWAY_BEFORE_LABEL")
        .map(|label| &*Box::leak(label.into_boxed_str()))
        .unwrap_or("gateway_before");
    let before = std::env::var_os("TOOL_CORE_GATEWAY_BEFORE").map(|program| {
        let store = format!(
            "sqlite://{}",
            before_dir.path().join("switches.db").display()
        );
        let limits = std::env::var("TOOL_CORE_GATEWAY_BEFORE_LIMITS").unwrap_or_default();
        let served = gateway_program(
            Path::new(&program),
            before_dir.path(),
            &store,
            &limits,
            &servers,
        );
        runtime.block_on(switch_one_off(&served));
        served
    });

    let stdio_dir = tempfile::tempdir().unwrap();
    let stdio_servers =
        format!("[[servers]]\nname = \"up\"\nprefix = \"up\"\ncommand = {UPSTREAM:?}\n");
    let stdio_store = format!(
        "sqlite://{}",
        stdio_dir.path().join("switches.db").display()
    );
    let through_stdio = gateway(stdio_dir.path(), &stdio_store, &stdio_servers);
    let peer = mcp_proxy().map(|program| peer(&program));
    if peer.is_none() {
        println!("no mcp-proxy: the peer is skipped");
    }

    let direct = Target::new("direct", &upstream.url, "add");
    let floor_target = Target::new("forward_proxy", &floor.url, "add");
    let gateway_http = Target::new("gateway", &through.url, "up_add");
    let gateway_before = before
        .as_ref()
        .map(|served| Target::new(before_label, &served.url, "up_add"));
    let gateway_stdio = Target::new("gateway_stdio", &through_stdio.url, "up_add");
    let peer_target = peer
        .as_ref()
        .map(|served| Target::new("mcp_proxy", &served.url, "add"));

    let mut group = criterion.benchmark_group("tools_call_one_client");
    for target in [&direct, &floor_target, &gateway_http]
        .into_iter()
        .chain(gateway_before.as_ref())
        .chain([&gateway_stdio])
        .chain(peer_target.as_ref())
    {
        group.bench_function(target.label, |b| b.iter(|| runtime.block_on(target.call())));
    }
    group.finish();

    // The gateway rows count the gateway process and the upstream's: CPU per call is the work
    // of everything serving the call.
    let rows: Vec<(&Target, Vec<&Served>)> = [
        (&direct, vec![&upstream]),
        (&floor_target, vec![&floor, &upstream]),
        (&gateway_http, vec![&through, &upstream]),
    ]
    .into_iter()
    .chain(
        gateway_before
            .iter()
            .zip(before.iter())
            .map(|(t, s)| (t, vec![s, &upstream])),
    )
    .chain([(&gateway_stdio, vec![&through_stdio])])
    .chain(
        peer_target
            .iter()
            .zip(peer.iter())
            .map(|(t, s)| (t, vec![s])),
    )
    .collect();
    println!(
        "\n{:<14} {:>7} {:>10} {:>10} {:>10} {:>14} {:>14}",
        "target", "clients", "median", "p99", "calls/s", "server CPU/call", "client CPU/call"
    );
    let mut one_client = Vec::new();
    for clients in [1, 64] {
        let calls = if clients == 1 { 1_000 } else { 64 * 40 };
        let mut samples: Vec<Samples> = rows.iter().map(|_| Samples::default()).collect();
        for _ in 0..ROUNDS {
            for ((target, serving), samples) in rows.iter().zip(&mut samples) {
                measure(&runtime, target, serving, clients, calls / ROUNDS, samples);
            }
        }
        for ((target, _), samples) in rows.iter().zip(samples) {
            let figures = samples.figures();
            println!(
                "{:<14} {:>7} {:>10} {:>10} {:>10.0} {:>14} {:>14}",
                target.label,
                clients,
                micros(figures.median),
                micros(figures.p99),
                figures.per_second,
                micros(figures.server_cpu_per_call),
                micros(figures.client_cpu_per_call),
            );
            if clients == 1 {
                one_client.push((target.label, figures.median));
            }
        }
    }
    println!(
        "(the gateway_stdio and mcp_proxy rows count the server process only; its stdio upstream is a child)"
    );
    let median_of = |label: &str| {
        one_client
            .iter()
            .find(|(row, _)| *row == label)
            .map(|(_, median)| *median)
    };
    if let Some(direct) = median_of("direct") {
        let allowed = direct * 6 / 5 + Duration::from_micros(200);
        println!(
            "one client, against 1.2 x direct + 200 µs = {} (the floor says what any hop gets):",
            micros(allowed)
        );
        for label in ["forward_proxy", "gateway", before_label] {
            if let Some(median) = median_of(label) {
                let verdict = if median <= allowed { "within" } else { "over" };
                println!("  {label:<14} {:>10}  {verdict}", micros(median));
            }
        }
    }

    let base = through.url.trim_end_matches("/mcp").to_owned();
    let same = runtime.block_on(propagation(&through.url, &base, "up_add", 10));
    println!(
        "\nswitch to list_changed, one process: median {}, max {}",
        micros(same[same.len() / 2]),
        micros(same[same.len() - 1])
    );
    match store_support::postgres() {
        None => println!("PostgreSQL not found: propagation across processes skipped"),
        Some(postgres) => {
            let (url, _) = runtime.block_on(postgres.create_database());
            let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let pair: Vec<Served> = dirs
                .iter()
                .map(|dir| gateway(dir.path(), &url, &servers))
                .collect();
            let first = pair[0].url.trim_end_matches("/mcp").to_owned();
            let across = runtime.block_on(propagation(&pair[1].url, &first, "up_add", 10));
            println!(
                "switch to list_changed, two processes through PostgreSQL: median {}, max {}",
                micros(across[across.len() / 2]),
                micros(across[across.len() - 1])
            );
        }
    }
    println!("load average at end: {}", load().trim());
    criterion.final_summary();
}
