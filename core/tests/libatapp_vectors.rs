//! Our libatapp hash modes against answers from outside our own code: key → owner vectors
//! (and the search modes' successor lists) printed by the C++ reproduction of libatapp's
//! `etcd_discovery_set` placement and lookup, `benches/cpp/libatapp_ring.cpp` (`vectors`
//! command; the `libatapp_cpp` test of switchboard-benches checks this file is exactly its
//! output). Layout `v012` is [`HashMode::LibatappV012`] (libatapp v0.11.0–v0.12.5), `main` is
//! [`HashMode::LibatappMain`] (libatapp main since `45f5fda`).

use switchboard_core::{
    hash::HashMode,
    ids::NodeId,
    ring::{Ring, RingConfig, RingMember, SearchMode},
};

const VECTORS: &str = include_str!("vectors/libatapp_ring.txt");

fn key_bytes(hex: &str) -> Vec<u8> {
    if hex == "-" {
        return Vec::new();
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex key"))
        .collect()
}

fn id(text: &str) -> NodeId {
    NodeId(text.parse().expect("decimal node id"))
}

/// One node set of the file with its expectations.
struct Set {
    mode: HashMode,
    name: String,
    nodes: Vec<(NodeId, String)>,
    lookups: Vec<(Vec<u8>, NodeId)>,
    searches: Vec<(SearchMode, usize, Vec<u8>, Vec<NodeId>)>,
}

fn parse() -> Vec<Set> {
    let mut sets: Vec<Set> = Vec::new();
    for line in VECTORS.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "set" => sets.push(Set {
                mode: match f[1] {
                    "v012" => HashMode::LibatappV012,
                    "main" => HashMode::LibatappMain,
                    other => panic!("unknown layout {other}"),
                },
                name: f[2].to_owned(),
                nodes: Vec::new(),
                lookups: Vec::new(),
                searches: Vec::new(),
            }),
            "node" => {
                let name = if f[3] == "-" { "" } else { f[3] };
                sets.last_mut()
                    .expect("node after set")
                    .nodes
                    .push((id(f[1]), name.to_owned()));
            }
            "lookup" => sets
                .last_mut()
                .expect("lookup after set")
                .lookups
                .push((key_bytes(f[1]), id(f[2]))),
            "search" => {
                let skip = id(f[3]);
                let base = match f[1] {
                    "all" => SearchMode::ALL,
                    "compact" => SearchMode::COMPACT,
                    "unique" | "next-unique" => SearchMode::UNIQUE,
                    "compact-unique" | "next-compact-unique" => SearchMode::COMPACT_UNIQUE,
                    other => panic!("unknown search mode {other}"),
                };
                let mode = if f[1].starts_with("next-") {
                    base.skipping(skip)
                } else {
                    assert_eq!(skip, NodeId(0), "{line}");
                    base
                };
                let k = f[2].parse().expect("count");
                let expected = f[5..].iter().map(|t| id(t)).collect();
                sets.last_mut().expect("search after set").searches.push((
                    mode,
                    k,
                    key_bytes(f[4]),
                    expected,
                ));
            }
            other => panic!("unknown line kind {other}"),
        }
    }
    sets
}

fn ring_of(set: &Set) -> Ring {
    let mut ring = Ring::new(RingConfig {
        mode: set.mode,
        ..RingConfig::default()
    });
    ring.build(
        set.nodes
            .iter()
            .map(|(id, name)| RingMember::new(*id, name)),
    )
    .expect("vector node ids are non-zero");
    ring
}

#[test]
fn the_file_holds_both_layouts_every_set_size_and_every_search_mode() {
    let sets = parse();
    let layout = |m: HashMode| sets.iter().filter(move |s| s.mode == m);
    for mode in [HashMode::LibatappV012, HashMode::LibatappMain] {
        let sizes: Vec<usize> = layout(mode).map(|s| s.nodes.len()).collect();
        assert_eq!(sizes, [1, 1, 3, 10, 100, 100, 1000], "{mode:?}");
        assert!(layout(mode).all(|s| s.lookups.len() == 49), "{mode:?}");
        // Sets with id-only nodes (empty names) exist in both layouts.
        assert_eq!(
            layout(mode)
                .filter(|s| s.nodes.iter().any(|(_, n)| n.is_empty()))
                .count(),
            3
        );
    }
    // v0.12.x has no search modes; main has six per key (13 keys per set).
    assert!(
        layout(HashMode::LibatappV012).all(|s| s.searches.is_empty()),
        "v012 sets carry no searches"
    );
    assert!(
        layout(HashMode::LibatappMain).all(|s| s.searches.len() == 13 * 6),
        "main sets carry every search mode"
    );
}

#[test]
fn libatapp_v012_mode_places_every_key_where_the_cpp_reference_does() {
    check_lookups(HashMode::LibatappV012);
}

#[test]
fn libatapp_main_mode_places_every_key_where_the_cpp_reference_does() {
    check_lookups(HashMode::LibatappMain);
}

fn check_lookups(mode: HashMode) {
    let mut checked = 0;
    for set in parse().iter().filter(|s| s.mode == mode) {
        let ring = ring_of(set);
        for (key, owner) in &set.lookups {
            assert_eq!(
                ring.lookup(key),
                Some(*owner),
                "{mode:?} set {} key {key:02x?}",
                set.name
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 7 * 49);
}

#[test]
fn libatapp_main_searches_return_the_cpp_reference_successors() {
    let mut checked = 0;
    let mut out = Vec::new();
    for set in parse().iter().filter(|s| s.mode == HashMode::LibatappMain) {
        let ring = ring_of(set);
        for (mode, k, key, expected) in &set.searches {
            ring.successors(key, *k, *mode, &mut out);
            assert_eq!(&out, expected, "set {} {mode:?} key {key:02x?}", set.name);
            checked += 1;
        }
    }
    assert_eq!(checked, 7 * 13 * 6);
}

#[test]
fn the_two_layouts_place_keys_differently() {
    // The vectors are not one layout twice. Both layouts share the name points of seeds
    // 0..40, so about half the keys keep their owner; in the 1000-node set 34 of 49 move.
    let sets = parse();
    let big = |m: HashMode| {
        sets.iter()
            .find(|s| s.mode == m && s.name == "thousand-named")
            .expect("both layouts have the 1000-node set")
    };
    let (old, new) = (big(HashMode::LibatappV012), big(HashMode::LibatappMain));
    let differ = old
        .lookups
        .iter()
        .zip(&new.lookups)
        .filter(|(a, b)| a.1 != b.1)
        .count();
    assert_eq!(differ, 34);
}
