//! The `web_chat` page in a real browser: headless Chromium driven over WebDriver sends a
//! message, watches the tool cards stream in, is asked to approve `write_file` inside its card
//! (again after a reload), denies it, then approves it in a later turn, and checks each outcome
//! on the page and on disk; it switches a tool off in the tools popover, reloads, and checks
//! that the switch held and the next request left the tool out.
//! Every control must have a name a screen reader reads. A screenshot of each step is saved
//! under `target/web-chat-screenshots/`.
//!
//! Needs Debian's `chromium` and `chromium-driver`; when they are missing and the test runs as
//! root it installs them, and when they cannot be had it says so loudly and passes.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::web_chat::{WebChat, scratch_file};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The longest any one wait of the test may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// A child process started in its own process group, killed with the whole group when dropped
/// (chromedriver's browsers included).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether Chromium and chromedriver are there, installing them once when they are not and
/// this process may.
fn browser_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let present = || Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
        if present() {
            return true;
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0");
        if !root {
            return false;
        }
        eprintln!("installing chromium and chromium-driver for the browser test");
        let installed = Command::new("sh")
            .args([
                "-c",
                "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y -qq chromium chromium-driver",
            ])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        installed && present()
    })
}

/// Where the screenshots go: `target/web-chat-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("web-chat-screenshots")
}

async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("a screenshot");
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("the screenshot is saved");
}

/// Starts chromedriver on a free loopback port and waits until it answers.
async fn start_chromedriver() -> (Group, String) {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("its address").port()
    };
    let mut command = Command::new(CHROMEDRIVER);
    command
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let driver = Group(command.spawn().expect("chromedriver starts"));
    let url = format!("http://127.0.0.1:{port}");
    let http = crate::http_client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("a client");
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(response) = http.get(format!("{url}/status")).send().await
            && response.status().is_success()
        {
            break;
        }
        assert!(Instant::now() < deadline, "chromedriver did not answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (driver, url)
}

/// Loads the page and waits until it shows a chat (a first visit makes one).
async fn open_page(client: &Client, url: &str) {
    client.goto(url).await.expect("the page loads");
    wait_for(
        client,
        "a chat",
        "return document.querySelector('#chat-list button[aria-current=page]') !== null;",
    )
    .await;
}

/// Runs `script` (a function body) until it returns something other than `null` or `false`.
async fn wait_for(client: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let value = client
            .execute(script, vec![])
            .await
            .expect("the script runs");
        if !value.is_null() && value != Value::Bool(false) {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The tool cards of the `turn`-th reply (from 0): each tool's name and state.
async fn cards(client: &Client, turn: usize) -> Vec<(String, String)> {
    let value = client
        .execute(
            "const turn = document.querySelectorAll('#conversation li.assistant')[arguments[0]];
             return [...turn.querySelectorAll('.tool-card')]
                 .map((card) => [card.dataset.tool, card.dataset.state]);",
            vec![json!(turn)],
        )
        .await
        .expect("the cards are read");
    serde_json::from_value(value).expect("pairs of strings")
}

/// Waits until the switch has the server's answer and returns whether it is on.
async fn settled_switch(client: &Client, tool: &str) -> bool {
    let script = format!(
        "const toggle = document.getElementById('tool-{tool}');
         return toggle && !toggle.dataset.pending ? {{ checked: toggle.checked }} : null;"
    );
    let value = wait_for(client, &format!("the switch of {tool}"), &script).await;
    value["checked"].as_bool().expect("a checked flag")
}

/// Opens the tools popover and waits until it lists `count` switches.
async fn open_tools(client: &Client, count: usize) {
    client
        .find(Locator::Css("#tools-button"))
        .await
        .expect("the tools button")
        .click()
        .await
        .expect("the tools button clicks");
    let script = format!(
        "return document.getElementById('tools').matches(':popover-open')
            && document.querySelectorAll('#tool-list input[role=switch]').length === {count};"
    );
    wait_for(client, "the tools popover", &script).await;
}

async fn send(client: &Client, text: &str, turns: usize) {
    let input = client
        .find(Locator::Css("#message"))
        .await
        .expect("the message box");
    input.send_keys(text).await.expect("typing works");
    client
        .find(Locator::Css("#send"))
        .await
        .expect("the send button")
        .click()
        .await
        .expect("send clicks");
    let script = format!(
        "return document.querySelectorAll('#conversation li.assistant[data-done=\"true\"]')
             .length === {turns};"
    );
    wait_for(client, &format!("reply {turns}"), &script).await;
}

/// Every control of the page with the name a screen reader would announce, computed the way
/// the accessible-name rules do for these elements: `aria-labelledby`, `aria-label`, the
/// associated `<label>`s, a button's text, then `title`.
const CONTROLS: &str = "
    const text = (node) => (node ? node.textContent : '').trim();
    const nameOf = (el) => {
        const by = el.getAttribute('aria-labelledby');
        if (by) return by.split(/\\s+/).map((id) => text(document.getElementById(id))).join(' ').trim();
        const label = (el.getAttribute('aria-label') || '').trim();
        if (label) return label;
        if (el.labels && el.labels.length) return [...el.labels].map(text).join(' ').trim();
        if (el.tagName === 'BUTTON') return text(el);
        return (el.getAttribute('title') || '').trim();
    };
    return [...document.querySelectorAll('button, input, textarea, select, [role=switch], [role=dialog]')]
        .map((el) => ({
            tag: el.tagName.toLowerCase(),
            id: el.id,
            type: el.type || null,
            role: el.getAttribute('role'),
            name: nameOf(el),
            focusable: el.tabIndex >= 0,
        }));";

/// Reads every control with [`CONTROLS`] and checks that each has a name.
async fn named_controls(client: &Client) -> Vec<Value> {
    let controls: Vec<Value> =
        serde_json::from_value(client.execute(CONTROLS, vec![]).await.unwrap()).unwrap();
    for control in &controls {
        assert!(
            !control["name"].as_str().unwrap_or_default().is_empty(),
            "a control without an accessible name: {control}"
        );
    }
    controls
}

/// Waits until the approval prompt of the `turn`-th reply's `write_file` card is shown.
async fn approval_prompt(client: &Client, turn: usize) {
    let script = format!(
        "const turn = document.querySelectorAll('#conversation li.assistant')[{turn}];
         const card = turn && turn.querySelector('.tool-card[data-tool=write_file]');
         return !!card && card.dataset.state === 'waiting'
             && !!card.querySelector('.approval button.approve:not([disabled])');"
    );
    wait_for(client, "the approval prompt", &script).await;
}

/// Clicks Approve or Deny (`which`) in the prompt of the `turn`-th reply, after typing `reason`
/// when there is one, and waits until the turn goes on to its reply and the page takes a new
/// message again (the reply's `done` event comes before the stream's end is handled).
async fn decide(client: &Client, turn: usize, which: &str, reason: Option<&str>) -> String {
    let turns = client
        .find_all(Locator::Css("#conversation li.assistant"))
        .await
        .expect("the replies");
    let prompt = turns[turn]
        .find(Locator::Css(".tool-card[data-tool=write_file] .approval"))
        .await
        .expect("the approval prompt");
    if let Some(reason) = reason {
        prompt
            .find(Locator::Css("input.reason"))
            .await
            .expect("the reason field")
            .send_keys(reason)
            .await
            .expect("typing works");
    }
    prompt
        .find(Locator::Css(&format!("button.{which}")))
        .await
        .expect("the button")
        .click()
        .await
        .expect("the button clicks");
    let script = format!(
        "const turn = document.querySelectorAll('#conversation li.assistant')[{turn}];
         const card = turn.querySelector('.tool-card[data-tool=write_file]');
         return turn.dataset.done === 'true' && !card.querySelector('.approval')
             && turn.querySelector('.text') && !document.getElementById('send').disabled
             ? card.querySelector('.result').textContent : null;"
    );
    wait_for(client, "the turn to go on", &script)
        .await
        .as_str()
        .expect("the result text")
        .to_owned()
}

/// A headless Chromium session, with its chromedriver and profile, ended when dropped.
struct Chromium {
    client: Client,
    _driver: Group,
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts Chromium with a window of this size, or says loudly why it cannot and returns
    /// `None`.
    async fn start(width: u32, height: u32) -> Option<Self> {
        if !browser_available() {
            crate::real_parts::skip(&format!(
                "\n!!!!!!!!\n!!! SKIPPED the browser test: {CHROMIUM} and {CHROMEDRIVER} are \
                 missing and could not be installed (apt-get install chromium \
                 chromium-driver)\n!!!!!!!!\n"
            ));
            return None;
        }
        let (driver, driver_url) = start_chromedriver().await;
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        });
        let client = ClientBuilder::rustls()
            .expect("a WebDriver client")
            .capabilities(serde_json::from_value(capabilities).expect("capabilities"))
            .connect(&driver_url)
            .await
            .expect("a browser session");
        Some(Self {
            client,
            _driver: driver,
            _profile: profile,
        })
    }
}

#[tokio::test]
async fn the_page_works_in_headless_chromium() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let Some(browser) = Chromium::start(1280, 860).await else {
        return;
    };
    let client = &browser.client;
    // A first visit makes a chat, and says the model is the offline one.
    open_page(client, &server.url).await;
    let offline = client
        .find(Locator::Css("#offline"))
        .await
        .expect("the offline notice");
    assert!(offline.is_displayed().await.unwrap());
    assert!(offline.text().await.unwrap().contains("offline test model"));
    // The page has an icon, so the browser asks for no `/favicon.ico` that is not there.
    let icon = client
        .execute(
            "const link = document.querySelector('link[rel=icon]');
             if (!link) return 'no icon link';
             return fetch(link.href).then((response) =>
                 `${response.status} ${response.headers.get('content-type')}`);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(icon, "200 image/svg+xml");
    screenshot(client, "1-new-chat").await;

    // A message: a card per tool call, filled with the result or the error; `write_file` waits
    // for approval, with the question inside its card.
    send(client, "What can you do?", 1).await;
    let waiting = [
        ("read_file", "ok"),
        ("write_file", "waiting"),
        ("save_session_context", "ok"),
        ("city_weather", "ok"),
        ("roll_dice", "ok"),
        ("current_time", "ok"),
        ("word_count", "ok"),
    ]
    .map(|(tool, state)| (tool.to_owned(), state.to_owned()));
    approval_prompt(client, 0).await;
    assert_eq!(cards(client, 0).await, waiting);
    let question = client
        .find(Locator::Css(
            "#conversation .tool-card[data-tool=write_file] .approval",
        ))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        question.contains("Allow write_file to run with these arguments?")
            && question.contains(r#"{"content":"example","path":"example"}"#),
        "{question}"
    );
    screenshot(client, "2-approval-prompt").await;
    // The prompt's controls have names that say which call they answer.
    let controls = named_controls(client).await;
    let names: Vec<&str> = controls
        .iter()
        .map(|control| control["name"].as_str().unwrap_or_default())
        .collect();
    for name in [
        "Approve write_file",
        "Deny write_file",
        "Reason for a denial (optional, told to the model)",
    ] {
        assert!(
            names.contains(&name),
            "no control named {name:?} in {names:?}"
        );
    }
    let group = client
        .execute(
            "const group = document.querySelector('.approval[role=group]');
             return group && document.getElementById(group.getAttribute('aria-labelledby')).textContent;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(group, "Allow write_file to run with these arguments?");

    // The question survives a reload: the call waits on the server.
    client.refresh().await.unwrap();
    approval_prompt(client, 0).await;
    assert_eq!(cards(client, 0).await, waiting);
    screenshot(client, "2b-approval-prompt-after-reload").await;

    // Deny, with a reason: the file is not written, the card says so, and the model answers.
    let result = decide(client, 0, "deny", Some("not now")).await;
    assert_eq!(
        result,
        "✗ Error: the user denied this call of write_file: not now"
    );
    assert_eq!(
        cards(client, 0).await[1],
        ("write_file".to_owned(), "denied".to_owned())
    );
    assert_eq!(scratch_file(data.path(), "example"), None);
    // The pressed button is disabled and gone; keyboard focus is back in the message box.
    let focused = client
        .execute("return document.activeElement.id;", vec![])
        .await
        .unwrap();
    assert_eq!(focused, "message");
    screenshot(client, "2c-denied").await;
    let expected = [
        ("read_file", "ok"),
        // Redrawn from the saved conversation, a denial is still a denial.
        ("write_file", "denied"),
        ("save_session_context", "ok"),
        ("city_weather", "ok"),
        ("roll_dice", "ok"),
        ("current_time", "ok"),
        ("word_count", "ok"),
    ];
    let weather = client
        .find(Locator::Css(
            "#conversation .tool-card[data-tool=city_weather] .result",
        ))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        weather,
        "→ Paris: light rain, 11 °C, wind 15 km/h from the west (sample data)"
    );
    let reply = client
        .find(Locator::Css("#conversation li.assistant .text"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        reply.starts_with("(test model) I called 7 tool(s)"),
        "{reply}"
    );
    let title = client
        .find(Locator::Css("#chat-title"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(title, "What can you do?");
    screenshot(client, "2-reply").await;

    // The popover lists every tool, all on; the weather tool goes off.
    open_tools(client, 7).await;
    screenshot(client, "3-tools").await;
    assert!(settled_switch(client, "city_weather").await);
    client
        .find(Locator::Css("#tool-city_weather"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert!(!settled_switch(client, "city_weather").await);
    // The keyboard works too: space on a focused switch flips it, and flips it back.
    let dice = client.find(Locator::Css("#tool-roll_dice")).await.unwrap();
    dice.send_keys(" ").await.unwrap();
    assert!(!settled_switch(client, "roll_dice").await);
    dice.send_keys(" ").await.unwrap();
    assert!(settled_switch(client, "roll_dice").await);
    screenshot(client, "4-switched-off").await;

    // Every control has a name a screen reader reads; the switches are real switches.
    let controls = named_controls(client).await;
    assert!(controls.len() >= 7 + 4, "{controls:?}");
    let switches: Vec<&Value> = controls
        .iter()
        .filter(|control| control["role"] == "switch")
        .collect();
    assert_eq!(switches.len(), 7, "{controls:?}");
    for switch in switches {
        assert_eq!(switch["tag"], "input", "{switch}");
        assert_eq!(switch["type"], "checkbox", "{switch}");
        assert_eq!(switch["focusable"], true, "{switch}");
    }
    let weather_switch = controls
        .iter()
        .find(|control| control["id"] == "tool-city_weather")
        .unwrap();
    assert_eq!(weather_switch["name"], "City weather");
    let read_switch = controls
        .iter()
        .find(|control| control["id"] == "tool-read_file")
        .unwrap();
    assert_eq!(read_switch["name"], "Read file");

    // A reload keeps the chat, its conversation and the switch.
    client.refresh().await.unwrap();
    wait_for(
        client,
        "the chat after the reload",
        "return document.querySelectorAll('#conversation .tool-card').length === 7;",
    )
    .await;
    assert_eq!(
        cards(client, 0).await,
        expected.map(|(tool, state)| (tool.to_owned(), state.to_owned())),
        "the conversation is redrawn from the server"
    );
    open_tools(client, 7).await;
    assert!(!settled_switch(client, "city_weather").await);
    assert!(settled_switch(client, "read_file").await);
    screenshot(client, "5-after-reload").await;

    // The next request does not offer the tool, so the test model does not call it.
    client
        .find(Locator::Css("#tools button[popovertargetaction=hide]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    send(client, "Once more, please.", 2).await;
    let second: Vec<String> = cards(client, 1)
        .await
        .into_iter()
        .map(|(tool, _)| tool)
        .collect();
    assert_eq!(
        second,
        [
            "read_file",
            "write_file",
            "save_session_context",
            "roll_dice",
            "current_time",
            "word_count"
        ]
    );
    // This time the write is approved: it runs, and the file is there.
    approval_prompt(client, 1).await;
    let result = decide(client, 1, "approve", None).await;
    assert!(result.starts_with("→ "), "{result}");
    assert_eq!(
        cards(client, 1).await[1],
        ("write_file".to_owned(), "ok".to_owned())
    );
    assert_eq!(
        scratch_file(data.path(), "example").as_deref(),
        Some("example")
    );
    screenshot(client, "6-without-the-tool").await;

    // A new chat starts from the preferences (the weather tool off) with an empty conversation.
    client
        .find(Locator::Css("#new-chat"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(
        client,
        "the second chat",
        "return document.querySelectorAll('#chat-list button').length === 2
            && document.querySelectorAll('#conversation li').length === 0
            && document.getElementById('chat-title').textContent === 'New chat';",
    )
    .await;
    open_tools(client, 7).await;
    assert!(!settled_switch(client, "city_weather").await);
    assert!(settled_switch(client, "roll_dice").await);
    screenshot(client, "7-new-chat").await;

    drop(server);
}

/// `seen(element)`: whether the element can be seen where it is: it has a size, lies inside the
/// window and inside every box around it that clips, and is what is on top at its centre.
const SEEN: &str = "
    const seen = (el) => {
        if (!el) return false;
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) return false;
        if (r.top < 0 || r.left < 0 || r.bottom > innerHeight + 0.5 || r.right > innerWidth + 0.5) return false;
        for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
            const style = getComputedStyle(box);
            if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
            const b = box.getBoundingClientRect();
            if (r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5
                || r.left < b.left - 0.5 || r.right > b.right + 0.5) return false;
        }
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return !!hit && (hit === el || el.contains(hit));
    };
";

/// Runs `body` (a function body) with [`SEEN`] defined.
async fn with_seen(client: &Client, body: &str) -> Value {
    client
        .execute(&format!("{SEEN}\n{body}"), vec![])
        .await
        .expect("the script runs")
}

/// Records the page's uncaught errors and unhandled rejections in `window.uncaught`, and counts
/// its fetches still under way in `window.fetching`.
const WATCH: &str = "
    window.uncaught = [];
    addEventListener('error', (event) => uncaught.push(String(event.message)));
    addEventListener('unhandledrejection', (event) => uncaught.push(String(event.reason)));
    window.fetching = 0;
    const fetch = window.fetch;
    window.fetch = (...args) => {
        window.fetching += 1;
        return fetch(...args).finally(() => { window.fetching -= 1; });
    };
";

/// Types `text` in the message box and clicks Send, without waiting for anything.
async fn type_and_send(client: &Client, text: &str) {
    if !text.is_empty() {
        client
            .find(Locator::Css("#message"))
            .await
            .expect("the message box")
            .send_keys(text)
            .await
            .expect("typing works");
    }
    client
        .find(Locator::Css("#send"))
        .await
        .expect("the send button")
        .click()
        .await
        .expect("send clicks");
}

/// Waits until the page shows an alert containing `text` and takes messages again, with no
/// fetch under way, and returns whether the alert can be seen.
async fn alert_seen(client: &Client, text: &str) -> bool {
    let script = format!(
        "{SEEN}
         const alert = [...document.querySelectorAll('[role=alert]')]
             .find((el) => !el.hidden && el.textContent.includes({text:?}));
         return alert && !document.getElementById('send').disabled && window.fetching === 0
             ? {{ seen: seen(alert) }} : null;"
    );
    let value = wait_for(client, &format!("an alert saying {text:?}"), &script).await;
    value["seen"].as_bool().expect("a flag")
}

#[tokio::test]
async fn a_refused_or_failed_send_keeps_the_text_and_shows_the_error() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let Some(browser) = Chromium::start(1280, 720).await else {
        return;
    };
    let client = &browser.client;
    open_page(client, &server.url).await;
    client.execute(WATCH, vec![]).await.unwrap();
    send(client, "What can you do?", 1).await;
    approval_prompt(client, 0).await;

    // A message while a call waits for approval is refused: the text stays in the box, the
    // refusal is in view, and nothing pretends the message was sent.
    type_and_send(client, "never mind").await;
    assert!(
        alert_seen(
            client,
            "tool calls wait for your approval; answer them first"
        )
        .await,
        "the refusal is out of sight"
    );
    screenshot(client, "8-refused").await;
    let state = client
        .execute(
            "return [document.getElementById('message').value,
                     document.querySelectorAll('#conversation li.user').length,
                     window.uncaught];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(state, json!(["never mind", 1, []]));

    // The server goes away: the send fails, the text stays, the error is in view, and no
    // error is left uncaught.
    drop(server);
    type_and_send(client, "").await;
    assert!(
        alert_seen(client, "the server could not be reached").await,
        "the failure is out of sight"
    );
    screenshot(client, "9-server-down").await;
    let state = client
        .execute(
            "return [document.getElementById('message').value, window.uncaught];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(state, json!(["never mind", []]));
}

/// Gives the page a viewport of this size (the window's frame, if any, added) and checks it.
async fn resize(client: &Client, width: u32, height: u32) {
    let inner = || async {
        let value = client
            .execute("return [innerWidth, innerHeight];", vec![])
            .await
            .expect("the viewport");
        serde_json::from_value::<(u32, u32)>(value).expect("two numbers")
    };
    client
        .set_window_size(width, height)
        .await
        .expect("a resize");
    let (inner_width, inner_height) = inner().await;
    if (inner_width, inner_height) != (width, height) {
        client
            .set_window_size(2 * width - inner_width, 2 * height - inner_height)
            .await
            .expect("a resize");
    }
    assert_eq!(inner().await, (width, height), "the viewport");
}

/// Every element that scrolls sideways (the page included): its id or class, scroll width and
/// width.
const SIDEWAYS: &str = "
    const boxes = [document.documentElement, ...document.querySelectorAll('body *')];
    return boxes
        .filter((el) => el === document.documentElement
            || ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
        .filter((el) => el.scrollWidth > el.clientWidth)
        .map((el) => [el.id || el.className || el.tagName, el.scrollWidth, el.clientWidth]);";

/// A file path with no place to break, as a model may quote one.
const LONG_PATH: &str = "/home/ada/projects/tool-core/examples/web_chat/some/deeply/nested/\
    folder/structure/that/goes/on/and/on/with_a_very_long_file_name_that_has_no_spaces_at_all\
    _and_keeps_going_for_a_while_longer_than_any_screen_is_wide.txt";

#[tokio::test]
async fn the_page_fits_a_phone_a_tablet_and_a_wide_screen() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with_example_tools(data.path());
    let Some(browser) = Chromium::start(1280, 900).await else {
        return;
    };
    let client = &browser.client;
    // The configuration adds four tools, two of them on.
    let tools = 7 + 4;
    for (index, (width, height, name)) in [
        (360, 740, "phone"),
        (820, 900, "tablet"),
        (1280, 900, "wide"),
    ]
    .into_iter()
    .enumerate()
    {
        resize(client, width, height).await;
        open_page(client, &server.url).await;
        if index == 0 {
            // A path in the message (and the saved session's path in the reply).
            send(client, LONG_PATH, 1).await;
            approval_prompt(client, 0).await;
            decide(client, 0, "deny", None).await;
        } else {
            wait_for(
                client,
                "the conversation",
                "return document.querySelector('#conversation li.assistant .text') !== null;",
            )
            .await;
        }
        screenshot(client, &format!("10-{name}")).await;

        // Nothing scrolls sideways, the title is one line, the notice a short one.
        let sideways = client.execute(SIDEWAYS, vec![]).await.unwrap();
        assert_eq!(sideways, json!([]), "{name}: scrolls sideways");
        let sizes = client
            .execute(
                "const title = document.getElementById('chat-title');
                 const font = parseFloat(getComputedStyle(title).fontSize);
                 return [title.getBoundingClientRect().height <= 2 * font,
                         title.getBoundingClientRect().right <= innerWidth,
                         document.getElementById('offline').getBoundingClientRect().height];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(sizes[0], true, "{name}: the title takes one line");
        assert_eq!(sizes[1], true, "{name}: the title fits");
        let notice = sizes[2].as_f64().unwrap();
        assert!(
            notice > 0.0 && notice <= 48.0,
            "{name}: the notice is {notice} px high"
        );

        // The chat list: beside the conversation on wide screens, behind a button on a phone.
        let narrow = width < 600;
        let chats = with_seen(
            client,
            "return [seen(document.querySelector('#chat-list button[aria-current=page]')),
                     seen(document.getElementById('chats-button'))];",
        )
        .await;
        assert_eq!(
            chats,
            json!([!narrow, narrow]),
            "{name}: the chat list, its button"
        );
        if narrow {
            let button = client.find(Locator::Css("#chats-button")).await.unwrap();
            assert_eq!(
                button.attr("aria-expanded").await.unwrap().as_deref(),
                Some("false")
            );
            button.click().await.unwrap();
            wait_for(
                client,
                "the chat list",
                &format!(
                    "{SEEN} return seen(document.querySelector('#chat-list button[aria-current=page]'));"
                ),
            )
            .await;
            assert_eq!(
                button.attr("aria-expanded").await.unwrap().as_deref(),
                Some("true")
            );
            assert_eq!(client.execute(SIDEWAYS, vec![]).await.unwrap(), json!([]));
            screenshot(client, &format!("10-{name}-chats")).await;
            // Picking a chat closes the list.
            client
                .find(Locator::Css("#chat-list button[aria-current=page]"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            wait_for(
                client,
                "the chat list to close",
                &format!(
                    "{SEEN} return !seen(document.querySelector('#chat-list button[aria-current=page]'))
                        && document.getElementById('chats-button').getAttribute('aria-expanded') === 'false';"
                ),
            )
            .await;
        }

        // The tools popover fits, its Close button in view.
        open_tools(client, tools).await;
        screenshot(client, &format!("10-{name}-tools")).await;
        let popover = with_seen(
            client,
            "const tools = document.getElementById('tools').getBoundingClientRect();
             return [seen(document.querySelector('#tools button[popovertargetaction=hide]')),
                     tools.left >= 0 && tools.top >= 0
                         && tools.right <= innerWidth && tools.bottom <= innerHeight];",
        )
        .await;
        assert_eq!(
            popover,
            json!([true, true]),
            "{name}: the popover and its Close button"
        );
        assert_eq!(client.execute(SIDEWAYS, vec![]).await.unwrap(), json!([]));
        client
            .find(Locator::Css("#tools button[popovertargetaction=hide]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }
    drop(server);
}

#[tokio::test]
async fn a_search_shows_as_a_card_and_the_popover_marks_the_deferred_tool() {
    let data = tempfile::tempdir().unwrap();
    let config = crate::web_chat::deferred_tool_config(data.path());
    let server = WebChat::start_with(data.path(), &["--tools-config", &config], &[]);
    let Some(browser) = Chromium::start(1280, 860).await else {
        return;
    };
    let client = &browser.client;
    open_page(client, &server.url).await;

    // Before any search: the tool is marked deferred in the popover.
    open_tools(client, 8).await;
    let mark = "const row = document.getElementById('tool-flip_coin').closest('li');
                const mark = row.querySelector('.tool-deferred');
                return mark ? mark.textContent : 'none';";
    let before = client.execute(mark, vec![]).await.unwrap();
    assert_eq!(before, json!("deferred"));
    let none = client
        .execute(
            "const row = document.getElementById('tool-read_file').closest('li');
             return row.querySelector('.tool-deferred') === null;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(none, json!(true), "an eager tool has no mark");
    screenshot(client, "search-popover").await;
    client
        .execute("document.getElementById('tools').hidePopover();", vec![])
        .await
        .unwrap();

    // The offline model calls every offered tool, the search tool among them: the search
    // shows as a card of its own, with what it looked for and what it loaded.
    send(client, "hello", 1).await;
    let card = wait_for(
        client,
        "a search card",
        "const card = document.querySelector('#conversation li.assistant .search-card');
         return card ? { label: card.getAttribute('aria-label'),
                         title: card.querySelector('h3').textContent,
                         result: card.querySelector('.search-result').textContent } : null;",
    )
    .await;
    let title = card["title"].as_str().unwrap();
    assert!(title.starts_with("🔍 "), "{card}");
    assert_eq!(
        card["label"].as_str().unwrap(),
        format!("Tool search {}", &title["🔍 ".len()..])
    );
    let result = card["result"].as_str().unwrap();
    assert!(
        result.starts_with("loaded ") || result.starts_with("found ") || result == "no tool found",
        "{card}"
    );
    screenshot(client, "search-card").await;

    // The popover says whether the search loaded the tool.
    open_tools(client, 8).await;
    let after = client.execute(mark, vec![]).await.unwrap();
    let loaded = result.starts_with("loaded ") && result.contains("flip_coin");
    assert_eq!(after, json!(if loaded { "loaded" } else { "deferred" }));
}
