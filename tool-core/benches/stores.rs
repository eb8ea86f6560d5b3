//! Preference store benchmarks, each against a hand-written baseline in the same run:
//!
//! - hydrate: opening a chat session whose user has preferences for 1,000 tools (the store's
//!   load plus filling the session's toggles), against cloning a `HashMap` (memory), reading
//!   and parsing the JSON file (file), and the raw `SELECT` through sqlx (SQLite, PostgreSQL);
//! - toggle: turning one tool of a 1,000-tool session off or on and saving it, against a
//!   `HashMap` insert (memory), one atomic write of the document (file), and the raw upsert
//!   through sqlx (SQLite, PostgreSQL).
//!
//! PostgreSQL runs when `TOOL_CORE_BENCH_POSTGRES_URL` names a database it may write to
//! (its `tool_preferences` table gets a `bench` scope); otherwise it is skipped with a message.

use std::{collections::HashMap, hint::black_box, path::Path, sync::Arc, time::Duration};

use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use tool_core::{
    ToolContext, ToolRegistry,
    config::{HandlerTable, ToolConfig},
    create_default_tool_registry,
    session::{ChatSession, FilePreferenceStore, MemoryPreferenceStore, PreferenceStore},
    store::SqlStore,
};

mod support;

const TOOLS: usize = 1000;
const SCOPE: &str = "bench";
const POSTGRES_URL: &str = "TOOL_CORE_BENCH_POSTGRES_URL";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The default tools plus `tool_0` … `tool_999`.
fn registry() -> Arc<ToolRegistry> {
    let registry = create_default_tool_registry(ToolContext::default());
    let tools: Vec<Value> = (0..TOOLS)
        .map(|n| {
            json!({
                "name": format!("tool_{n}"),
                "description": "A tool.",
                "type": "function",
                "handler": "mock",
                "parameters": { "type": "object" },
                "implementation": { "type": "mock", "mock_response": "ok" }
            })
        })
        .collect();
    let report = ToolConfig::from_value(Value::Array(tools))
        .unwrap()
        .register(&registry, &HandlerTable::new());
    assert!(report.is_clean());
    Arc::new(registry)
}

fn preferences() -> HashMap<String, bool> {
    (0..TOOLS)
        .map(|n| (format!("tool_{n}"), n % 2 == 0))
        .collect()
}

/// One store under test with the baselines that do its essential work by hand.
struct Case {
    name: &'static str,
    store: Arc<dyn PreferenceStore>,
    hydrate_baseline: HydrateBaseline,
    toggle_baseline: ToggleBaseline,
}

type HydrateBaseline = Box<dyn Fn(&tokio::runtime::Runtime) -> usize>;
type ToggleBaseline = Box<dyn Fn(&tokio::runtime::Runtime, bool)>;

type Baselines = (HydrateBaseline, ToggleBaseline);

/// The raw sqlx queries the SQL store's hydrate and toggle come down to.
macro_rules! raw_baselines {
    ($pool:expr) => {{
        let select = $pool.clone();
        let upsert = $pool;
        let baselines: Baselines = (
            Box::new(move |rt: &tokio::runtime::Runtime| {
                rt.block_on(async {
                    let rows: Vec<(String, bool)> = sqlx::query_as(
                        "SELECT tool, enabled FROM tool_preferences WHERE scope = $1",
                    )
                    .bind(SCOPE)
                    .fetch_all(&select)
                    .await
                    .unwrap();
                    rows.into_iter().collect::<HashMap<String, bool>>().len()
                })
            }),
            Box::new(move |rt: &tokio::runtime::Runtime, on: bool| {
                rt.block_on(async {
                    sqlx::query(
                        "INSERT INTO tool_preferences (scope, tool, enabled) VALUES ($1, $2, $3)
                         ON CONFLICT (scope, tool) DO UPDATE SET enabled = excluded.enabled",
                    )
                    .bind(SCOPE)
                    .bind("tool_501")
                    .bind(on)
                    .execute(&upsert)
                    .await
                    .unwrap();
                })
            }),
        );
        baselines
    }};
}

fn cases(rt: &tokio::runtime::Runtime, dir: &Path) -> Vec<Case> {
    let mut cases = Vec::new();

    let memory = MemoryPreferenceStore::with_preferences(preferences());
    let map = Arc::new(std::sync::Mutex::new(preferences()));
    let insert_map = map.clone();
    cases.push(Case {
        name: "memory",
        store: Arc::new(memory),
        hydrate_baseline: Box::new(move |_| map.lock().unwrap().clone().len()),
        toggle_baseline: Box::new(move |_, on| {
            insert_map.lock().unwrap().insert("tool_500".to_owned(), on);
        }),
    });

    let path = dir.join("prefs.json");
    let file = FilePreferenceStore::new(&path);
    rt.block_on(async {
        for (name, enabled) in preferences() {
            file.set(&name, enabled).await.unwrap();
        }
    });
    let read_path = path.clone();
    let baseline_path = dir.join("baseline.json");
    let document = std::fs::read(&path).unwrap();
    cases.push(Case {
        name: "file",
        store: Arc::new(file),
        hydrate_baseline: Box::new(move |_| {
            let value: Value = serde_json::from_slice(&std::fs::read(&read_path).unwrap()).unwrap();
            value["tools"]
                .as_object()
                .unwrap()
                .iter()
                .filter_map(|(name, entry)| Some((name.clone(), entry["enabled"].as_bool()?)))
                .collect::<HashMap<String, bool>>()
                .len()
        }),
        toggle_baseline: Box::new(move |_, _| {
            write_file_atomically(&baseline_path, &document);
        }),
    });

    let sqlite_url = format!("sqlite://{}", dir.join("prefs.db").display());
    cases.push(sql_case(rt, "sqlite", &sqlite_url, |rt, url| {
        let pool = rt
            .block_on(sqlx::SqlitePool::connect(url))
            .expect("connect to the SQLite file");
        raw_baselines!(pool)
    }));

    match std::env::var(POSTGRES_URL) {
        #[cfg(feature = "postgres")]
        Ok(url) => cases.push(sql_case(rt, "postgres", &url, |rt, url| {
            let pool = rt
                .block_on(sqlx::PgPool::connect(url))
                .expect("connect to PostgreSQL");
            raw_baselines!(pool)
        })),
        #[cfg(not(feature = "postgres"))]
        Ok(_) => println!("{POSTGRES_URL} is set but tool-core's `postgres` feature is off"),
        Err(_) => {
            println!("skipping PostgreSQL: set {POSTGRES_URL} to a database URL to benchmark it");
        }
    }
    cases
}

fn sql_case(
    rt: &tokio::runtime::Runtime,
    name: &'static str,
    url: &str,
    baselines: impl FnOnce(&tokio::runtime::Runtime, &str) -> Baselines,
) -> Case {
    let store = rt.block_on(SqlStore::open(url)).unwrap();
    let preferences_store = store.preferences_for(SCOPE);
    rt.block_on(async {
        for (tool, enabled) in preferences() {
            preferences_store.set(&tool, enabled).await.unwrap();
        }
    });
    let (hydrate_baseline, toggle_baseline) = baselines(rt, url);
    Case {
        name,
        store: Arc::new(preferences_store),
        hydrate_baseline,
        toggle_baseline,
    }
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let registry = registry();
    let cases = cases(&rt, dir.path());

    let mut group = c.benchmark_group("hydrate_1000");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    for case in &cases {
        group.bench_function(case.name, |b| {
            b.iter(|| {
                let session = rt
                    .block_on(ChatSession::open(registry.clone(), case.store.clone()))
                    .unwrap();
                black_box(session)
            });
        });
        group.bench_function(format!("baseline_{}", case.name), |b| {
            b.iter(|| black_box((case.hydrate_baseline)(&rt)));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("toggle");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    for case in &cases {
        let session = rt
            .block_on(ChatSession::open(registry.clone(), case.store.clone()))
            .unwrap();
        let mut on = false;
        group.bench_function(case.name, |b| {
            b.iter(|| {
                on = !on;
                rt.block_on(session.set_enabled("tool_500", on)).unwrap();
            });
        });
        group.bench_function(format!("baseline_{}", case.name), |b| {
            b.iter(|| {
                on = !on;
                (case.toggle_baseline)(&rt, on);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let names = ["memory", "file", "sqlite", "postgres"];
    let baselines: Vec<String> = names
        .iter()
        .map(|name| format!("baseline_{name}"))
        .collect();
    let mut pairs = Vec::new();
    for group in ["hydrate_1000", "toggle"] {
        for (name, baseline) in names.iter().zip(&baselines) {
            pairs.push((group, *name, baseline.as_str()));
        }
    }
    support::print_ratios("stores", &pairs);
}

/// The hand-written baseline of a durable file write: a temporary file in the same directory,
/// synced, renamed over the target.
fn write_file_atomically(path: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    let parent = path
        .parent()
        .expect("the bench's files live in a directory");
    let mut file = tempfile::NamedTempFile::new_in(parent).unwrap();
    file.write_all(bytes).unwrap();
    file.as_file().sync_all().unwrap();
    file.persist(path).unwrap();
}
