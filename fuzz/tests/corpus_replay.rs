//! Replays every committed corpus file through its target on stable, so a crash the fuzzer
//! once found stays fixed.

use std::{fs, path::Path};

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut count = 0;
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus folder {} unreadable: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let data = fs::read(&path).expect("corpus file");
        run(&data);
        count += 1;
    }
    count
}

#[test]
fn discovery_json_corpus_replays_cleanly() {
    let replayed = replay("discovery_json", switchboard_fuzz::discovery_json);
    assert!(replayed >= 6, "corpus has only {replayed} files");
}
