//! The gateway's pinned definitions, tool search index and listen streams, in front of a server
//! written with the official Python SDK (`tests/mcp_python/gateway_pins_upstream.py`) whose
//! `forecast` tool changes one part of its definition at a time.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::mcp_gateway::{
    ALICE, BOB, Gateway, LIMIT, config, config_text, eventually, pg_count, post, runtime,
    with_store,
};
use crate::mcp_python::python;
use crate::served::open_listen;

const POST: reqwest::Method = reqwest::Method::POST;
const GET: reqwest::Method = reqwest::Method::GET;
const DELETE: reqwest::Method = reqwest::Method::DELETE;

/// A `[[servers]]` entry for the pins upstream: server `pins`, prefix `pn`; `block` (TOML
/// array items) names tools the gateway does not serve.
fn pins_upstream(python: &Path, block: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_pins_upstream.py");
    format!(
        "[[servers]]\nname = \"pins\"\nprefix = \"pn\"\ncommand = {python:?}\nargs = [{script:?}]\nblock = [{block}]\n\n",
        python = python.display().to_string(),
        script = script.display().to_string(),
    )
}

/// The definition changes waiting for an operator, as the admin API lists them.
fn pending(gateway: &Gateway) -> Value {
    let (status, pins) = gateway.admin(GET, "/admin/pins", None);
    assert_eq!(status, 200, "{pins}");
    pins["pending"].clone()
}

/// Alice's call of `pn_forecast` for Oslo: the answer's body.
fn forecast(gateway: &Gateway) -> String {
    gateway
        .call(ALICE, "pn_forecast", json!({"city": "Oslo"}))
        .1
}

/// Calls `tool` (one of the upstream's redefining tools) and waits until the forecast is
/// withheld as changed.
fn change_and_wait(gateway: &Gateway, tool: &str) {
    let (status, answer) = gateway.call(ALICE, tool, json!({}));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("redefined"), "{answer}");
    eventually(&format!("the forecast to be withheld after {tool}"), || {
        forecast(gateway).contains("-32602")
    });
}

fn accept_forecast(gateway: &Gateway) {
    let (status, answer) = gateway.admin(POST, "/admin/pins/pn_forecast/accept", None);
    assert_eq!(status, 200, "{answer}");
    assert!(forecast(gateway).contains("sunny in Oslo"));
}

/// Runs `query` on the SQLite store in `dir`; its first column's text values.
fn sqlite(dir: &Path, query: &'static str) -> Vec<String> {
    use sqlx::Connection as _;
    let database = format!("sqlite://{}", dir.join("switches.db").display());
    runtime().block_on(async move {
        let mut connection = sqlx::SqliteConnection::connect(&database).await.unwrap();
        sqlx::query_scalar::<_, String>(query)
            .fetch_all(&mut connection)
            .await
            .unwrap()
    })
}

#[test]
fn a_change_of_only_the_output_schema_the_annotations_or_the_icon_is_withheld_until_accepted() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &pins_upstream(python, ""),
    ));
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    // The output schema alone changes (a field more in the result).
    change_and_wait(&gateway, "pn_reshape");
    let waiting = pending(&gateway);
    assert_eq!(waiting["pn_forecast"]["server"], "pins", "{waiting}");
    // An accept naming another change than the one waiting accepts nothing, and says which
    // one waits; naming the one waiting accepts it.
    let offered = waiting["pn_forecast"]["offered"].clone();
    let accept = "/admin/pins/pn_forecast/accept";
    let other = json!({"offered": "0".repeat(64)});
    let (status, answer) = gateway.admin(POST, accept, Some(other));
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["offered"], offered, "{answer}");
    assert!(forecast(&gateway).contains("-32602"));
    let (status, answer) = gateway.admin(POST, accept, Some(json!({"offered": offered})));
    assert_eq!(status, 200, "{answer}");
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    assert_eq!(pending(&gateway), json!({}));
    // Back as at start: a change from the accepted definition.
    change_and_wait(&gateway, "pn_revert");
    accept_forecast(&gateway);
    // The annotations alone change (the tool now says it is destructive).
    change_and_wait(&gateway, "pn_rehint");
    accept_forecast(&gateway);
    // The title alone changes.
    change_and_wait(&gateway, "pn_retitle");
    accept_forecast(&gateway);
    // The icon alone changes (clients show it beside the tool).
    change_and_wait(&gateway, "pn_reicon");
    accept_forecast(&gateway);
    assert_eq!(pending(&gateway), json!({}));
}

/// The hex SHA-256 of what the gateway pinned before pins covered the output schema and the
/// annotations: `{"description", "inputSchema", "title"}` with sorted keys, no spaces.
fn former_pin(description: &str, input_schema: &Value, title: &str) -> String {
    fn canonical(value: &Value) -> String {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let entries: Vec<String> = keys
                    .into_iter()
                    .map(|key| format!("{}:{}", Value::String(key.clone()), canonical(&map[key])))
                    .collect();
                format!("{{{}}}", entries.join(","))
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(canonical).collect();
                format!("[{}]", items.join(","))
            }
            other => other.to_string(),
        }
    }
    let claim = json!({"description": description, "inputSchema": input_schema, "title": title});
    Sha256::digest(canonical(&claim).as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[test]
fn pins_in_the_former_format_are_taken_over_without_withholding_a_tool() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "stateless = true", &pins_upstream(python, ""));
    drop(Gateway::start(&config));
    // The forecast's pin as the former format wrote it (the schema as the upstream lists it).
    let schema = json!({
        "properties": {"city": {"title": "City", "type": "string"}},
        "required": ["city"],
        "type": "object",
        "title": "forecastArguments"
    });
    let former = former_pin("The forecast for a city.", &schema, "Forecast");
    let forecast_pin = "SELECT sha256 FROM tool_gateway_pins WHERE tool = 'pn_forecast'";
    {
        use sqlx::Connection as _;
        let database = format!("sqlite://{}", dir.path().join("switches.db").display());
        let former = former.clone();
        runtime().block_on(async move {
            let mut connection = sqlx::SqliteConnection::connect(&database).await.unwrap();
            sqlx::query("UPDATE tool_gateway_pins SET sha256 = $1 WHERE tool = 'pn_forecast'")
                .bind(former)
                .execute(&mut connection)
                .await
                .unwrap();
        });
    }

    let gateway = Gateway::start(&config);
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    assert_eq!(pending(&gateway), json!({}));
    let log = gateway.log();
    assert!(
        !log.contains("the upstream changed the tool's definition"),
        "{log}"
    );
    // Pinned again in the current format, which covers the output schema.
    let pinned = sqlite(dir.path(), forecast_pin);
    assert_eq!(pinned.len(), 1);
    assert_ne!(pinned[0], former, "still the former pin");
    assert_eq!(pinned[0].len(), 64, "{pinned:?}");
    change_and_wait(&gateway, "pn_reshape");
}

#[test]
fn a_change_the_upstream_took_back_is_no_longer_pending_also_after_a_restart() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "stateless = true", &pins_upstream(python, ""));
    let gateway = Gateway::start(&config);
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    let stored = "SELECT tool FROM tool_gateway_pending";

    // Taken back while the gateway runs.
    change_and_wait(&gateway, "pn_reshape");
    assert_eq!(pending(&gateway)["pn_forecast"]["server"], "pins");
    let (_, answer) = gateway.call(ALICE, "pn_revert", json!({}));
    assert!(answer.contains("redefined"), "{answer}");
    eventually("the forecast to be served again", || {
        forecast(&gateway).contains("sunny in Oslo")
    });
    assert_eq!(pending(&gateway), json!({}));
    assert_eq!(sqlite(dir.path(), stored), Vec::<String>::new());

    // Taken back while the gateway was stopped: the restarted upstream serves the pinned
    // definition.
    change_and_wait(&gateway, "pn_reshape");
    assert_eq!(sqlite(dir.path(), stored), ["pn_forecast"]);
    drop(gateway);
    let gateway = Gateway::start(&config);
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    eventually("the taken back change to be forgotten", || {
        pending(&gateway) == json!({})
    });
    assert_eq!(sqlite(dir.path(), stored), Vec::<String>::new());
}

#[test]
fn a_change_another_gateway_still_sees_stays_pending_when_one_serves_the_pin() {
    let Some(python) = python() else { return };
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let (url, _) = runtime().block_on(postgres.create_database());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let gateways: Vec<Gateway> = dirs
        .iter()
        .map(|dir| {
            let path = config(dir.path(), "stateless = true", &pins_upstream(python, ""));
            Gateway::start(&with_store(&path, &url))
        })
        .collect();
    let (first, second) = (&gateways[0], &gateways[1]);
    assert!(forecast(first).contains("sunny in Oslo"));
    // Only the second process's upstream changes the forecast.
    change_and_wait(second, "pn_reshape");
    let change = pending(second)["pn_forecast"].clone();
    assert_eq!(change["server"], "pins");
    // The first process's upstream lists its tools again (with the forecast as pinned).
    let (_, answer) = first.call(ALICE, "pn_grow", json!({"count": 1}));
    assert!(answer.contains("grew 1"), "{answer}");
    eventually("the first process to serve the new tool", || {
        first
            .call(ALICE, "pn_extra_0", json!({}))
            .1
            .contains("extra 0")
    });
    assert!(forecast(first).contains("sunny in Oslo"));
    // The second one still sees the change: it stays listed, by both.
    let stored = "SELECT count(*) FROM tool_gateway_pending WHERE tool = $1";
    eventually("the change to be stored still", || {
        pg_count(&url, stored, "pn_forecast") == 1
    });
    eventually("both processes to list the change", || {
        pending(first)["pn_forecast"] == change && pending(second)["pn_forecast"] == change
    });
}

/// The JSON-RPC message of an answer (its JSON, or its event stream's first message).
fn message_of(answer: &str) -> Value {
    let start = answer.find('{').unwrap_or_else(|| panic!("{answer}"));
    serde_json::Deserializer::from_str(&answer[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("{answer}"))
}

/// How many times the gateway's log says it built a user's tool search index, once every line
/// logged before is read: an operator's switch (of a user who never searches) is logged after
/// them, and its line is waited for.
fn index_builds(gateway: &Gateway) -> usize {
    const SWITCHED: &str = "an operator switched a tool";
    let marks = gateway.log().matches(SWITCHED).count();
    gateway.switch("carol", "pn_revert", marks % 2 == 1);
    eventually("the gateway's log to be read", || {
        gateway.log().matches(SWITCHED).count() > marks
    });
    gateway.log().matches("built the tool search index").count()
}

/// The names `search_tools` finds for the user of `token`.
fn search(gateway: &Gateway, token: &str, query: &str) -> Vec<String> {
    let (status, answer) =
        gateway.call(token, "search_tools", json!({"query": query, "limit": 50}));
    assert_eq!(status, 200, "{answer}");
    let message = message_of(&answer);
    let text = message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let found: Value = serde_json::from_str(text).unwrap();
    found["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_search_index_is_built_again_only_when_the_catalog_or_the_users_switches_change() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        "stateless = true\ntool_search = true",
        &pins_upstream(python, ""),
    );
    let gateway = Gateway::start_with(
        &path,
        &[],
        &[("RUST_LOG", "warn,rmcp=error,tool_core::gateway=debug")],
    );
    let forecasts = |token| search(&gateway, token, "forecast for a city");
    assert_eq!(forecasts(ALICE)[0], "pn_forecast");
    assert_eq!(index_builds(&gateway), 1);
    for _ in 0..3 {
        assert_eq!(forecasts(ALICE)[0], "pn_forecast");
    }
    assert_eq!(index_builds(&gateway), 1, "the same catalog and switches");

    // A switch of Alice's: her index is built again, and never finds the tool switched off.
    gateway.switch("alice", "pn_forecast", false);
    assert!(!forecasts(ALICE).contains(&"pn_forecast".to_owned()));
    assert_eq!(index_builds(&gateway), 2);
    assert!(!forecasts(ALICE).contains(&"pn_forecast".to_owned()));
    assert_eq!(index_builds(&gateway), 2);
    // Bob has his own.
    assert_eq!(forecasts(BOB)[0], "pn_forecast");
    assert_eq!(index_builds(&gateway), 3);
    gateway.switch("alice", "pn_forecast", true);
    assert_eq!(forecasts(ALICE)[0], "pn_forecast");
    assert_eq!(index_builds(&gateway), 4);

    // The catalog changes: the new tools are found.
    let (_, answer) = gateway.call(ALICE, "pn_grow", json!({"count": 2}));
    assert!(answer.contains("grew 2"), "{answer}");
    eventually("the new tools to be found", || {
        search(&gateway, ALICE, "extra tool number").contains(&"pn_extra_1".to_owned())
    });
    let builds = index_builds(&gateway);
    assert!(search(&gateway, ALICE, "extra tool number").contains(&"pn_extra_1".to_owned()));
    assert_eq!(index_builds(&gateway), builds);
}

/// A 2026-07-28 `subscriptions/listen` stream of Alice's, counting the
/// `notifications/tools/list_changed` it receives until dropped.
pub(crate) struct Listener {
    notified: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    pub(crate) fn open(url: &str) -> Self {
        let notified = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, opened) = std::sync::mpsc::channel();
        let thread = std::thread::spawn({
            let (url, notified, stop) = (url.to_owned(), notified.clone(), stop.clone());
            move || {
                runtime().block_on(async move {
                    let client = crate::http_client::client();
                    let response = open_listen(&client, &url, ALICE).await.unwrap();
                    assert!(response.status().is_success(), "{}", response.status());
                    let mut stream = response.bytes_stream();
                    let mut seen = String::new();
                    let deadline = Instant::now() + LIMIT;
                    let mut told = false;
                    while !stop.load(Ordering::Acquire) && Instant::now() < deadline {
                        let next =
                            tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
                        if let Ok(Some(Ok(bytes))) = next {
                            seen.push_str(&String::from_utf8_lossy(&bytes));
                            let count = seen.matches("notifications/tools/list_changed").count();
                            notified.store(count, Ordering::Release);
                        } else if matches!(next, Ok(None | Some(Err(_)))) {
                            return;
                        }
                        if !told {
                            told = true;
                            let _ = ready.send(());
                        }
                    }
                });
            }
        });
        opened.recv_timeout(LIMIT).expect("the stream to open");
        Self {
            notified,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn notified(&self) -> usize {
        self.notified.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Alice's `tools/list`, as a self-contained 2026-07-28 request.
fn alices_tools(gateway: &Gateway) -> Vec<String> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/list",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    })
    .to_string();
    let authorization = format!("Bearer {ALICE}");
    let (status, answer) = post(&gateway.url, &[("authorization", &authorization)], body);
    assert_eq!(status, 200, "{answer}");
    message_of(&answer)["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_burst_of_changes_is_one_list_changed_on_a_listen_stream_and_the_last_state_is_listed() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&config(dir.path(), "", &pins_upstream(python, "")));
    let listener = Listener::open(&gateway.url);
    assert_eq!(listener.notified(), 0);

    // Forty tools come at once.
    let (_, answer) = gateway.call(ALICE, "pn_grow", json!({"count": 40}));
    assert!(answer.contains("grew 40"), "{answer}");
    eventually("a list_changed", || listener.notified() > 0);
    let tools = alices_tools(&gateway);
    assert!(tools.contains(&"pn_extra_39".to_owned()), "{tools:?}");
    // Give the stream time for any further notification of the burst.
    std::thread::sleep(Duration::from_millis(500));
    let burst = listener.notified();
    assert!(
        burst <= 2,
        "{burst} notifications for one burst of 40 tools"
    );

    // A switch later is a notification of its own; the list shows it.
    gateway.switch("alice", "pn_extra_39", false);
    eventually("the switch's list_changed", || listener.notified() > burst);
    assert!(!alices_tools(&gateway).contains(&"pn_extra_39".to_owned()));
}

#[test]
fn an_operator_drops_the_pin_of_a_tool_no_server_offers() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pins = "SELECT tool FROM tool_gateway_pins WHERE tool LIKE 'pn_%' ORDER BY tool";
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &pins_upstream(python, ""),
    ));
    // A served tool's pin stays: dropping it would accept whatever the server offers next.
    let (status, answer) = gateway.admin(DELETE, "/admin/pins/pn_forecast", None);
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = gateway.admin(DELETE, "/admin/pins/pn_nothing", None);
    assert_eq!(status, 404, "{answer}");
    drop(gateway);

    // The operator blocks the forecast: no server offers it now.
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &pins_upstream(python, "\"forecast\""),
    ));
    assert!(
        sqlite(dir.path(), pins).contains(&"pn_forecast".to_owned()),
        "the pin outlives its tool until dropped"
    );
    let (status, answer) = gateway.admin(DELETE, "/admin/pins/pn_forecast", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"dropped": "pn_forecast"}));
    assert_eq!(
        sqlite(dir.path(), pins),
        [
            "pn_grow",
            "pn_rehint",
            "pn_reicon",
            "pn_reshape",
            "pn_retitle",
            "pn_revert"
        ]
    );
    drop(gateway);

    // Offered again, the forecast is pinned as first seen again.
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &pins_upstream(python, ""),
    ));
    assert!(forecast(&gateway).contains("sunny in Oslo"));
    assert!(sqlite(dir.path(), pins).contains(&"pn_forecast".to_owned()));
}

/// Two processes share a store; an operator blocks the forecast on one of them and drops its
/// pin there. The other, whose server still offers the forecast, keeps the pin and stores it
/// again, so a later change of the forecast is withheld there, over every reload of the pins;
/// and while a change waits, no process drops the pin.
#[test]
fn a_pin_dropped_through_a_process_not_offering_its_tool_stays_with_the_one_that_does() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The pins are read again every second (a quarter of the idle timeout).
    let extra = "stateless = true\nsession_idle_timeout_secs = 4";
    let offering = Gateway::start(&config(dir.path(), extra, &pins_upstream(python, "")));
    let blocking_config = dir.path().join("blocking.toml");
    std::fs::write(
        &blocking_config,
        config_text(dir.path(), extra, &pins_upstream(python, "\"forecast\"")),
    )
    .unwrap();
    let blocking = Gateway::start(&blocking_config);
    assert!(forecast(&offering).contains("sunny in Oslo"));
    let pinned = "SELECT sha256 FROM tool_gateway_pins WHERE tool = 'pn_forecast'";
    let pin = sqlite(dir.path(), pinned);
    assert_eq!(pin.len(), 1, "{pin:?}");

    let (status, answer) = blocking.admin(DELETE, "/admin/pins/pn_forecast", None);
    assert_eq!(status, 200, "{answer}");
    eventually("the offering process to store the pin again", || {
        sqlite(dir.path(), pinned) == pin
    });
    assert!(
        offering.log().contains("the pin is kept and stored again"),
        "{}",
        offering.log()
    );

    change_and_wait(&offering, "pn_reshape");
    // Once the change is in the store (the offering process withholds the tool first and
    // stores the change after; a drop in between is undone as above), no process drops the pin.
    eventually("the change to be stored", || {
        pending(&blocking)["pn_forecast"]["server"] == "pins"
    });
    let (status, answer) = blocking.admin(DELETE, "/admin/pins/pn_forecast", None);
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|error| error.contains("a change of the tool waits")),
        "{answer}"
    );
    // Three reloads of the pins later, the change is still withheld.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        forecast(&offering).contains("-32602"),
        "{}",
        forecast(&offering)
    );
    assert_eq!(sqlite(dir.path(), pinned), pin);
}

/// Pins outlive their tools, so a server that keeps offering new names cannot grow them
/// without end: past `max_pins_per_server` its new tools are withheld, with a log line, and a
/// pin an operator drops (of a tool no server offers) makes room for one of them at once.
#[test]
fn a_servers_pins_are_capped_and_a_dropped_pin_makes_room() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pins = "SELECT tool FROM tool_gateway_pins WHERE tool LIKE 'pn_%' ORDER BY tool";
    let extra = "stateless = true\nmax_pins_per_server = 8";
    let served = |gateway: &Gateway, index: usize| {
        let tool = format!("pn_extra_{index}");
        let (_, answer) = gateway.call(ALICE, &tool, json!({}));
        answer.contains(&format!("extra {index}"))
    };
    let grow = |gateway: &Gateway| {
        let (_, answer) = gateway.call(ALICE, "pn_grow", json!({"count": 2}));
        assert!(answer.contains("grew 2"), "{answer}");
        eventually("the first new tool to be served", || served(gateway, 0));
    };

    // Seven tools at start, and two more: the eighth is pinned, the ninth withheld.
    let gateway = Gateway::start(&config(dir.path(), extra, &pins_upstream(python, "")));
    assert_eq!(sqlite(dir.path(), pins).len(), 7);
    grow(&gateway);
    assert!(!served(&gateway, 1));
    assert!(
        gateway
            .call(ALICE, "pn_extra_1", json!({}))
            .1
            .contains("-32602")
    );
    assert_eq!(sqlite(dir.path(), pins).len(), 8);
    assert!(
        gateway
            .log()
            .contains("hold as many pins as `max_pins_per_server` allows"),
        "{}",
        gateway.log()
    );
    drop(gateway);

    // The operator blocks `revert`; its pin, of a tool no server offers now, is dropped, and
    // the withheld tool takes its place.
    let gateway = Gateway::start(&config(
        dir.path(),
        extra,
        &pins_upstream(python, "\"revert\""),
    ));
    grow(&gateway);
    assert!(!served(&gateway, 1));
    let (status, answer) = gateway.admin(DELETE, "/admin/pins/pn_revert", None);
    assert_eq!(status, 200, "{answer}");
    assert!(served(&gateway, 1));
    let stored = sqlite(dir.path(), pins);
    assert_eq!(stored.len(), 8, "{stored:?}");
    assert!(stored.contains(&"pn_extra_1".to_owned()), "{stored:?}");
    assert!(!stored.contains(&"pn_revert".to_owned()), "{stored:?}");
}
