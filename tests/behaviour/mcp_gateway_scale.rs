//! Several `mcp_gateway` processes sharing one PostgreSQL preference store (started by the
//! tests themselves): a switch made through one reaches the others, behind a round-robin proxy
//! and across a dropped connection.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sqlx::Connection as _;

use crate::mcp_gateway::{
    ALICE, Gateway, LIMIT, call_request, config, eventually, pg_count, post, py_tools_without,
    python_upstream, runtime, switch_off_request, with_store,
};
use crate::mcp_python::python;
use crate::proxy_support::RoundRobin;

/// The tools Alice lists through the gateway at `url` (a stateless 2026-07-28 `tools/list`),
/// sorted.
fn listed(url: &str) -> Vec<String> {
    // A `tools/call` request's envelope (its `_meta`), made a `tools/list`.
    let mut message: Value = serde_json::from_str(&call_request("", json!({}))).unwrap();
    message["method"] = json!("tools/list");
    message["params"] = json!({"_meta": message["params"]["_meta"].take()});
    let alice = format!("Bearer {ALICE}");
    let (status, answer) = post(
        url,
        &[("authorization", alice.as_str())],
        message.to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer)
        .ok()
        .or_else(|| {
            answer
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str(data.trim()).ok())
        })
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {answer}"));
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Runs `statement` (trusted test SQL) in the PostgreSQL database at `url`.
fn pg_execute(url: &str, statement: String) {
    runtime().block_on(async {
        let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut connection)
            .await
            .unwrap();
    });
}

/// Counts the connections of PostgreSQL role `$1` that `LISTEN`.
const LISTENING: &str =
    "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND query LIKE 'LISTEN%'";
/// Counts the connections of PostgreSQL role `$1`.
const CONNECTED: &str = "SELECT count(*) FROM pg_stat_activity WHERE usename = $1";

#[test]
fn a_gateway_that_lost_its_listening_connection_learns_the_switches_made_meanwhile() {
    let Some(python) = python() else { return };
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let (url, database) = runtime().block_on(postgres.create_database());
    // The second process connects as a role of its own, so that its listening connection can be
    // found, and its reconnection held off for a while (a role's connection limit does not bind
    // a superuser; owning the database lets it make the tables).
    let role = format!("{database}_second");
    let admin = postgres.url("postgres");
    pg_execute(&admin, format!("CREATE ROLE \"{role}\" LOGIN"));
    pg_execute(
        &admin,
        format!("ALTER DATABASE \"{database}\" OWNER TO \"{role}\""),
    );
    let second_url = url.replacen("postgres://postgres:", &format!("postgres://{role}:"), 1);
    assert_ne!(second_url, url);
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let start = |dir: &Path, store: &str| {
        let path = config(
            dir,
            "stateless = true",
            &python_upstream(python, "python", "py", ""),
        );
        Gateway::start(&with_store(&path, store))
    };
    // The second first: it makes the tables, as their owner.
    let second = start(dirs[1].path(), &second_url);
    let first = start(dirs[0].path(), &url);

    // The second process has Alice's switches loaded (all on).
    assert_eq!(listed(&second.url), py_tools_without(&[]));
    eventually("the second process to listen", || {
        pg_count(&url, LISTENING, &role) == 1
    });

    // Its connections drop (the listening one and the idle ones the pool would hand it), and
    // cannot come back for now.
    pg_execute(&admin, format!("ALTER ROLE \"{role}\" CONNECTION LIMIT 0"));
    pg_execute(
        &admin,
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"),
    );
    eventually("the second process's connections to be gone", || {
        pg_count(&url, CONNECTED, &role) == 0
    });
    // Meanwhile Alice switches py_echo off through the first process.
    let alice = format!("Bearer {ALICE}");
    let (status, answer) = post(
        &first.url,
        &[("authorization", alice.as_str())],
        switch_off_request("py_echo"),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo is off"), "{answer}");
    assert_eq!(listed(&first.url), py_tools_without(&["py_echo"]));
    assert_eq!(pg_count(&url, LISTENING, &role), 0, "announced while away");
    // The connection comes back: the second process catches up.
    pg_execute(&admin, format!("ALTER ROLE \"{role}\" CONNECTION LIMIT -1"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tools = listed(&second.url);
        if tools == py_tools_without(&["py_echo"]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "30 s after the connection came back, the second process still lists {tools:?}\n{}",
            second.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = second.log();
    assert!(
        log.contains("lost the other gateway processes' announcements"),
        "{log}"
    );
    eventually("the second process to listen again", || {
        pg_count(&url, LISTENING, &role) == 1
    });
}

#[test]
fn behind_a_round_robin_proxy_a_switch_reaches_a_listen_stream_held_by_the_other_process() {
    let Some(python) = python() else { return };
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let (url, _) = runtime().block_on(postgres.create_database());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let gateways: Vec<Gateway> = dirs
        .iter()
        .map(|dir| {
            let path = config(dir.path(), "", &python_upstream(python, "python", "py", ""));
            Gateway::start(&with_store(&path, &url))
        })
        .collect();
    let proxy = RoundRobin::start([gateways[0].url.clone(), gateways[1].url.clone()]);

    // The official Python SDK's client holds a `subscriptions/listen` stream through the proxy.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_client.py");
    let mut listener = Command::new(python)
        .arg(script)
        .args(["--listen", &proxy.url, ALICE])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = listener.stdout.take().unwrap();
    let (lines, read) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    let ready = read.recv_timeout(LIMIT).expect("the client to be ready");
    assert_eq!(ready.trim(), "ready");
    let holder = proxy
        .forwarded()
        .iter()
        .find(|(_, asked)| asked == "subscriptions/listen")
        .map(|(backend, _)| *backend)
        .unwrap_or_else(|| panic!("no listen stream went through: {:?}", proxy.forwarded()));

    // The switch goes through the proxy to the process that does not hold the stream.
    if proxy.next_backend() == holder {
        let health = runtime().block_on(async {
            crate::http_client::client()
                .get(proxy.url.replace("/mcp", "/healthz"))
                .timeout(LIMIT)
                .send()
                .await
                .unwrap()
                .status()
        });
        assert_eq!(health.as_u16(), 200);
    }
    let alice = format!("Bearer {ALICE}");
    let (status, answer) = post(
        &proxy.url,
        &[("authorization", alice.as_str())],
        switch_off_request("py_echo"),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo is off"), "{answer}");
    let switched = proxy
        .forwarded()
        .iter()
        .rev()
        .find(|(_, asked)| asked == "tools/call")
        .map(|(backend, _)| *backend);
    assert_eq!(switched, Some(1 - holder), "{:?}", proxy.forwarded());

    // The stream's holder tells the client; the client's next list, through the proxy, lacks it.
    let report = read.recv_timeout(LIMIT).expect("the client's report");
    let deadline = Instant::now() + LIMIT;
    while listener.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the client did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(listener.wait().unwrap().success());
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["notified"], true, "{report}");
    assert_eq!(
        report["tools"],
        json!(py_tools_without(&["py_echo"])),
        "{report}"
    );
    // Whichever process answers next lists it without the tool.
    let before = proxy.forwarded().len();
    for _ in 0..2 {
        assert_eq!(listed(&proxy.url), py_tools_without(&["py_echo"]));
    }
    let mut answered: Vec<usize> = proxy.forwarded()[before..]
        .iter()
        .map(|(backend, _)| *backend)
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, [0, 1]);
}

#[test]
fn a_change_one_gateway_saw_is_accepted_through_another_sharing_postgres() {
    let Some(python) = python() else { return };
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let (url, _) = runtime().block_on(postgres.create_database());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let gateways: Vec<Gateway> = dirs
        .iter()
        .map(|dir| {
            let path = config(
                dir.path(),
                "stateless = true",
                &python_upstream(python, "python", "py", ""),
            );
            Gateway::start(&with_store(&path, &url))
        })
        .collect();
    let (first, second) = (&gateways[0], &gateways[1]);
    let alice = format!("Bearer {ALICE}");
    let weather = |gateway: &Gateway| {
        let body = call_request("py_weather", json!({"city": "Oslo"}));
        post(&gateway.url, &[("authorization", alice.as_str())], body).1
    };
    assert!(weather(first).contains("sunny in Oslo"));
    assert!(weather(second).contains("sunny in Oslo"));
    // Only the second process's upstream changes the tool.
    let body = call_request("py_redefine", json!({}));
    let (_, answer) = post(&second.url, &[("authorization", alice.as_str())], body);
    assert!(answer.contains("redefined"), "{answer}");
    eventually("the second process to withhold the changed tool", || {
        weather(second).contains("-32602")
    });
    let (_, pins) = second.admin(reqwest::Method::GET, "/admin/pins", None);
    let change = pins["pending"]["py_weather"].clone();
    assert_eq!(change["server"], "python", "{pins}");
    // The first process, whose upstream did not change, serves it still, and lists the change.
    assert!(weather(first).contains("sunny in Oslo"));
    eventually("the first process to list the change", || {
        let (_, pins) = first.admin(reqwest::Method::GET, "/admin/pins", None);
        pins["pending"]["py_weather"] == change
    });

    // An operator accepts it through the first process: the second serves the new definition.
    let (status, answer) =
        first.admin(reqwest::Method::POST, "/admin/pins/py_weather/accept", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"accepted": "py_weather"}));
    eventually(
        "the second process to serve the accepted definition",
        || weather(second).contains("sunny in Oslo"),
    );
    let pins = "SELECT count(*) FROM tool_gateway_pins WHERE tool = 'py_weather' AND sha256 = $1";
    assert_eq!(pg_count(&url, pins, change["offered"].as_str().unwrap()), 1);
    // The first process's upstream still offers the old definition, now a change of its own.
    eventually("the first process to withhold its old definition", || {
        weather(first).contains("-32602")
    });
    let (_, pins) = first.admin(reqwest::Method::GET, "/admin/pins", None);
    assert_eq!(
        pins["pending"]["py_weather"],
        json!({"server": "python", "pinned": change["offered"], "offered": change["pinned"]}),
        "{pins}"
    );
}
