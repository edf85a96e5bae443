//! A node's log lines, captured as the JSON the CLI writes with `--log-format json`, over a
//! scripted run on real loopback TCP (two nodes link, one is killed, the other schedules a
//! reconnect): every node id in decimal (never `0x…` nor `NodeId(…)`), incarnations as JSON
//! strings (they exceed 2^53), and no `Debug` of the core's enums — the events carry
//! structured fields.

mod support;

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use serde_json::{Value, json};
use switchboard_core::ids::NodeId;

use support::{STEP, direct, start, start_registry, wait_known};

/// Where the subscriber writes: every line the process logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("not poisoned").clone();
        String::from_utf8(bytes)
            .expect("UTF-8 logs")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8 logs")
    }
}

/// The `fields` of the first line whose message is `message` and whose `fields` hold
/// every pair of `with`.
fn find(lines: &[Value], message: &str, with: &Value) -> Option<Value> {
    lines.iter().find_map(|line| {
        let fields = line.get("fields")?;
        let matches = fields["message"] == message
            && (with.as_object()?.iter()).all(|(key, value)| fields.get(key) == Some(value));
        matches.then(|| fields.clone())
    })
}

/// Whether `text` holds `0x` followed by a hex digit (an id written in hex).
fn has_hex_id(text: &str) -> bool {
    text.match_indices("0x").any(|(at, _)| {
        text[at + 2..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_decimal_incarnations_are_strings_and_events_are_structured() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .init();

    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _) = start(direct(addr, 501, "a")).await;
    let (b, mut inbox) = start(direct(addr, 301, "b")).await;
    wait_known(&a, &[501, 301]).await;
    let target = switchboard_tokio::TargetSpec::Id(NodeId(301));
    let outcome = a.send(target, 1, Bytes::from_static(b"hi")).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let got = tokio::time::timeout(STEP, inbox.recv())
        .await
        .expect("in time");
    assert!(got.is_some());
    let b_incarnation = b.incarnation();
    b.kill();

    // The survivor schedules a reconnect to the killed node (bounded wait).
    let scheduled = json!({ "id": 501, "target": 301 });
    let deadline = tokio::time::Instant::now() + STEP;
    while find(&captured.lines(), "route reconnect scheduled", &scheduled).is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}",
            captured.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let lines = captured.lines();
    let text = captured.text();
    assert!(!text.contains("NodeId("), "{text}");
    assert!(!has_hex_id(&text), "{text}");
    assert!(!text.contains("ReconnectScheduled"), "{text}");
    // Exact fields of a few events.
    assert_eq!(
        find(&lines, "link up", &json!({ "id": 501, "peer": 301 })).map(|f| f["id"].clone()),
        Some(json!(501)),
        "{text}"
    );
    let started = find(&lines, "node started", &json!({ "id": 301 })).expect("started");
    assert_eq!(
        (&started["name"], &started["incarnation"]),
        (&json!("b"), &json!(b_incarnation.to_string())),
        "{text}"
    );
    let scheduled = find(&lines, "route reconnect scheduled", &scheduled).expect("scheduled");
    assert_eq!(
        scheduled
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "attempt".to_owned(),
            "id".to_owned(),
            "message".to_owned(),
            "target".to_owned()
        ]),
        "{scheduled}"
    );
    // Every incarnation is a string, in every line that carries one.
    for line in &lines {
        for key in ["incarnation", "replaced", "holder"] {
            if let Some(value) = line["fields"].get(key) {
                assert!(value.is_string(), "{key} in {line}");
            }
        }
    }
}
