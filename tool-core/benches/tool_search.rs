//! Tool search over 10,000 tools: one query through the index's postings, against a scan that
//! scores every tool with the same BM25F formula, in the same run. Prints the median of each,
//! their ratio, the median time to build the index and to update one tool in it (replace its
//! definition, as an MCP `list_changed` does), the allocations of one build, and the index's
//! memory per tool. Allocations are counted by an instrumented allocator, which makes each one a
//! little dearer for the index and the scan alike.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use counting::allocations;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_core::{ChatTool, search::ToolIndex};

#[path = "support/counting.rs"]
mod counting;

const TOOLS: usize = 10_000;
const QUERY: &str = "create a new calendar event for a meeting";
/// A request in the user's own words: `make` and `folder` are looked for as their related
/// words too (`create`, `directory`…), so it reads more postings.
const OWN_WORDS: &str = "could you make me a new folder for the reports";

const DOMAINS: [&str; 20] = [
    "github",
    "slack",
    "calendar",
    "files",
    "postgres",
    "browser",
    "email",
    "jira",
    "notion",
    "drive",
    "weather",
    "maps",
    "shop",
    "crm",
    "docker",
    "kubernetes",
    "spotify",
    "photos",
    "notes",
    "billing",
];
const VERBS: [&str; 10] = [
    "create", "list", "get", "update", "delete", "search", "move", "share", "archive", "export",
];
const NOUNS: [&str; 10] = [
    "item", "event", "message", "folder", "record", "comment", "user", "label", "report", "page",
];

/// Distinct tools that read like those of real MCP servers: a verb on a noun of a domain,
/// with a description and two described parameters.
fn tools() -> Vec<ChatTool> {
    (0..TOOLS)
        .map(|i| {
            let domain = DOMAINS[i % DOMAINS.len()];
            let verb = VERBS[(i / DOMAINS.len()) % VERBS.len()];
            let noun = NOUNS[(i / (DOMAINS.len() * VERBS.len())) % NOUNS.len()];
            let name = format!("{domain}_{verb}_{noun}_{i}");
            let description = format!(
                "{verb} a {noun} in {domain}. Returns the {noun} as JSON, with its id, its \
                 owner and when it was last changed. Use it when the user asks to {verb} \
                 {noun}s of their {domain} account."
            );
            ChatTool::new(
                &name,
                description,
                json!({
                    "type": "object",
                    "properties": {
                        format!("{noun}_id"): { "type": "string", "description": format!("The {noun}'s id in {domain}.") },
                        "limit": { "type": "integer", "description": "The most results to return." }
                    },
                    "required": [format!("{noun}_id")]
                }),
            )
        })
        .collect()
}

fn build(tools: &[ChatTool]) -> ToolIndex {
    ToolIndex::new(tools.iter().map(|tool| (tool, None)))
}

fn search(c: &mut Criterion) {
    let tools = tools();
    let index = build(&tools);
    for query in [QUERY, OWN_WORDS] {
        let by_index = index.search(query, 5).map(|found| found.hits);
        let by_scan = index.search_by_scan(query, 5).map(|found| found.hits);
        assert_eq!(by_index, by_scan, "both ways find the same tools");
    }
    let mut group = c.benchmark_group("tool_search");
    group.bench_function("index, 10,000 tools", |b| {
        b.iter(|| index.search(black_box(QUERY), 5));
    });
    group.bench_function("scan, 10,000 tools", |b| {
        b.iter(|| index.search_by_scan(black_box(QUERY), 5));
    });
    group.bench_function("index, own words, 10,000 tools", |b| {
        b.iter(|| index.search(black_box(OWN_WORDS), 5));
    });
    group.bench_function("scan, own words, 10,000 tools", |b| {
        b.iter(|| index.search_by_scan(black_box(OWN_WORDS), 5));
    });
    let mut updated = build(&tools);
    let versions = changed(&tools[TOOLS / 2]);
    let mut turn = 0;
    group.bench_function("update one tool, 10,000 tools", |b| {
        b.iter(|| {
            turn += 1;
            updated.upsert(black_box(&versions[turn % 2]), None);
        });
    });
    group.finish();
    print_medians(&tools, &index);
}

/// Two definitions of one tool that differ in their text, to switch between.
fn changed(tool: &ChatTool) -> [ChatTool; 2] {
    let other = ChatTool::new(
        tool.name(),
        format!("{} Also archives what it replaces.", tool.description()),
        tool.parameters().clone(),
    );
    [other, tool.clone()]
}

/// Medians of interleaved single runs, so both ways see the same machine load.
fn print_medians(tools: &[ChatTool], index: &ToolIndex) {
    fn median(mut times: Vec<Duration>) -> Duration {
        times.sort_unstable();
        times[times.len() / 2]
    }
    fn once(run: impl FnOnce()) -> Duration {
        let start = Instant::now();
        run();
        start.elapsed()
    }
    let rounds = 501;
    let mut postings = Vec::with_capacity(rounds);
    let mut scan = Vec::with_capacity(rounds);
    let mut own_postings = Vec::with_capacity(rounds);
    let mut own_scan = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        postings.push(once(|| {
            black_box(index.search(black_box(QUERY), 5)).ok();
        }));
        scan.push(once(|| {
            black_box(index.search_by_scan(black_box(QUERY), 5)).ok();
        }));
        own_postings.push(once(|| {
            black_box(index.search(black_box(OWN_WORDS), 5)).ok();
        }));
        own_scan.push(once(|| {
            black_box(index.search_by_scan(black_box(OWN_WORDS), 5)).ok();
        }));
    }
    let (own_postings, own_scan) = (median(own_postings), median(own_scan));
    let builds: Vec<Duration> = (0..11)
        .map(|_| {
            once(|| {
                black_box(build(tools));
            })
        })
        .collect();
    let mut updated = build(tools);
    let versions = changed(&tools[TOOLS / 2]);
    let updates: Vec<Duration> = (0..rounds)
        .map(|round| once(|| updated.upsert(black_box(&versions[round % 2]), None)))
        .collect();
    let (postings, scan, build_time) = (median(postings), median(scan), median(builds));
    let (build_allocations, build_bytes) = allocations(|| build(tools));
    let (update_allocations, _) = allocations(|| updated.upsert(&versions[rounds % 2], None));
    #[allow(clippy::cast_precision_loss)]
    let per_tool = index.memory_bytes() as f64 / TOOLS as f64;
    println!(
        "tool_search, {TOOLS} tools: index {postings:?}, scan {scan:?} (median of {rounds}); \
         scan/index = {:.1}; own words: index {own_postings:?}, scan {own_scan:?}, scan/index = \
         {:.1}; index build {build_time:?} (median of 11; build/scan = {:.0}); \
         update of one tool {:?} (median of {rounds}, {update_allocations} allocations); build \
         allocations {build_allocations} ({build_bytes} bytes); index memory {per_tool:.0} bytes per tool",
        scan.as_secs_f64() / postings.as_secs_f64().max(1e-12),
        own_scan.as_secs_f64() / own_postings.as_secs_f64().max(1e-12),
        build_time.as_secs_f64() / scan.as_secs_f64().max(1e-12),
        median(updates),
    );
}

criterion_group!(benches, search);
criterion_main!(benches);
