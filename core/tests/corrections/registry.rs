//! Registry corrections: revision gating, duplicate watcher events, and topology data
//! (host, pid) that counts for the direct-link policy.

use super::*;

/// A node's discovery record, published at revision `rev` with `listen` as its address.
fn discovery_at(id: u64, rev: u64, listen: &str) -> RegistryEvent {
    let mut info = discovery_info(NodeId(id), &name(id));
    info.listen = vec![listen.to_owned()];
    info.revision = rev;
    RegistryEvent::DiscoveryPut(info.into())
}

/// An older registry event never overwrites a newer one, whatever the arrival order: a
/// discovery put at revision 90 after one at 100 is ignored (the node keeps the newer address
/// and dials it), so is a discovery delete at 95, and a topology put at 90 after one at 100
/// (the stale one would have moved 0x202 under 0x201).
///
/// libatapp applies discovery PUTs with no revision gate (spec §10 item 8): a late event
/// from a slow watcher or a re-list replaces the newer record, here with a dead address.
#[test]
fn older_discovery_revision_never_overwrites_newer() {
    let mut sim = start(GROUP_B, &[(0x203, 0), (0x201, 0x203)]);
    sim.add_node_at(config(GROUP_B, 0x202, 0x203), "sim://node-202-new")
        .expect("valid config");
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    let n201 = NodeId(0x201);
    let mut topo = topology_info(NodeId(0x202), &name(0x202), NodeId(0x203));
    topo.revision = 100;
    sim.inject_registry(n201, RegistryEvent::TopologyPut(topo.clone().into()));
    topo.revision = 90;
    topo.upstream_id = NodeId(0x201);
    sim.inject_registry(n201, RegistryEvent::TopologyPut(topo.into()));
    sim.inject_registry(n201, discovery_at(0x202, 100, "sim://node-202-new"));
    sim.inject_registry(n201, discovery_at(0x202, 90, "sim://node-202-old"));
    sim.inject_registry(
        n201,
        RegistryEvent::DiscoveryDelete {
            id: NodeId(0x202),
            name: name(0x202),
            revision: 95,
        },
    );

    assert_eq!(
        events_where(&sim, 0x201, |e| matches!(e, Event::RegistryIgnored(_))),
        [
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::StaleTopology {
                    id: NodeId(0x202),
                    revision: 90,
                    held: 100
                })
            ),
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
        ]
    );
    let node = sim.node(n201);
    assert_eq!(
        node.inspect().topology().upstream_of(NodeId(0x202)),
        Some(NodeId(0x203))
    );
    let held = node
        .inspect()
        .discovery()
        .get_by_id(NodeId(0x202))
        .expect("kept");
    assert_eq!(
        (held.revision, held.listen.as_slice()),
        (100, ["sim://node-202-new".to_owned()].as_slice())
    );

    sim.advance_to(at(1));
    let msg = send(&mut sim, 0x201, 0x202, 100, "to-the-newer-address");
    sim.run_until_idle();
    assert!(
        sim.trace()
            .iter()
            .any(|l| l.contains("0x201 -> connect") && l.contains("sim://node-202-new"))
    );
    assert_eq!(
        got(&sim, 0x202),
        [(at(1), 0x201, 0x201, 100, "to-the-newer-address".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(1), Outcome::Delivered)));
}

/// The `by_id` and `by_name` watchers deliver every change twice; each change applies once.
/// A queued message waits for 0x202's discovery record (`WAIT_DISCOVERY`); the record
/// arrives at 1 s in two copies: the first resumes the route (one dial, the message
/// delivered once), the second is ignored as a duplicate — no second dial, no second link.
/// The two copies of the delete at 5 s: the first removes the record, the second is ignored.
///
/// libatapp deduplicates the two copies only by protobuf equality of the record (spec §10
/// item 8); ours by revision and content, so a duplicate never re-runs a reaction.
#[test]
fn by_id_and_by_name_duplicates_apply_once() {
    let mut sim = start(GROUP_B, &LAYOUT_B);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    common::publish_topology(&mut sim, 0x202, 0x203);
    sim.run_until_idle();
    let msg = send(&mut sim, 0x201, 0x202, 100, "waits-for-discovery");
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY, None))
    );

    sim.advance_to(at(1));
    common::publish_discovery(&mut sim, 0x202);
    let copy = sim
        .registry()
        .discovery(NodeId(0x202))
        .cloned()
        .expect("published");
    sim.inject_registry(NodeId(0x201), RegistryEvent::DiscoveryPut(copy.into()));
    sim.run_until_idle();

    let dials = sim
        .trace()
        .iter()
        .filter(|l| l.contains("0x201 -> connect") && l.contains("to 0x202"))
        .count();
    assert_eq!(dials, 1);
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 1);
    assert_eq!(
        got(&sim, 0x202),
        [(at(1), 0x201, 0x201, 100, "waits-for-discovery".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(1), Outcome::Delivered)));

    sim.advance_to(at(5));
    let revision = sim.registry_delete_discovery(NodeId(0x202));
    sim.inject_registry(
        NodeId(0x201),
        RegistryEvent::DiscoveryDelete {
            id: NodeId(0x202),
            name: name(0x202),
            revision,
        },
    );
    assert_eq!(
        sim.node(NodeId(0x201))
            .inspect()
            .discovery()
            .get_by_id(NodeId(0x202)),
        None
    );
    assert_eq!(
        events_where(&sim, 0x201, |e| matches!(e, Event::RegistryIgnored(_))),
        [
            (
                at(1),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
            (
                at(5),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
        ]
    );
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
}

/// `id`'s topology record under `upstream`, on `hostname` with `pid`.
fn placed(id: u64, upstream: u64, hostname: &str, pid: i32) -> TopologyInfo {
    let mut info = topology_info(NodeId(id), &name(id), NodeId(upstream));
    info.hostname = hostname.to_owned();
    info.pid = pid;
    info
}

/// A host (or process) change in a peer's topology record counts for the direct-link
/// policy. Under `require_same_host` 0x501 links directly to 0x502 while both are on
/// `host-a`; at 10 s 0x502 moves to `host-b` (its topology record says so, its old link
/// dies). The direct path is no longer allowed: instead of re-dialling 0x502 (which would
/// succeed — its address still answers) the record switches to the proxy 0x503 at once,
/// ready, and the message sent at 11 s is relayed. The same holds for a pid change under
/// `require_same_process`, and when the link is lost first (the re-dial, still judged by the
/// old host, fails) and the moved record arrives after.
///
/// libatapp's topology equality ignores hostname and pid (spec §10 item 9, I.30): the move
/// is not applied, the policy keeps judging the old host, and the node re-dials directly.
#[test]
fn host_or_pid_change_counts_for_policy() {
    // (require_same_process, link lost before the moved record arrives)
    for (same_process, link_first) in [(false, false), (true, false), (false, true)] {
        let layout = LAYOUT_E;
        let mut sim = start_with(GROUP_E, &layout, |c| {
            c.hostname = "host-a".to_owned();
            c.pid = 7;
            c.topology_policy.require_same_host = !same_process;
            c.topology_policy.require_same_process = same_process;
        });
        for &(id, up) in &layout {
            sim.registry_put_topology(placed(id, up, "host-a", 7));
        }
        for &(id, _) in &layout {
            common::publish_discovery(&mut sim, id);
        }
        sim.run_until_idle();
        let first = send(&mut sim, 0x501, 0x502, 100, "same-host-direct");
        sim.run_until_idle();
        assert_eq!(
            route(&sim, 0x501, 0x502),
            Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
        );

        sim.advance_to(at(10));
        let moved = if same_process {
            placed(0x502, 0x503, "host-a", 8)
        } else {
            placed(0x502, 0x503, "host-b", 7)
        };
        if link_first {
            sim.link_down(NodeId(0x501), NodeId(0x502));
            sim.run_until_idle();
            assert_eq!(route(&sim, 0x501, 0x502), Some((RouteFlags::ACTIVE, None)));
            sim.registry_put_topology(moved);
        } else {
            sim.registry_put_topology(moved);
            // Only the registry says 0x502 moved (its own config still says host-a, so its
            // probe back would be allowed): the probes fail, the move is what is tested.
            common::cut_past_the_probes(&mut sim, 0x501, 0x502);
        }
        sim.run_until_idle();
        assert_eq!(
            route(&sim, 0x501, 0x502),
            Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x503)))),
            "same_process = {same_process}, link_first = {link_first}"
        );
        assert_eq!(sim.open_links(NodeId(0x501), NodeId(0x502)), 0);

        sim.advance_to(at(11));
        let second = send(&mut sim, 0x501, 0x502, 100, "after-the-move");
        sim.run_until_idle();
        assert_eq!(
            got(&sim, 0x502),
            [
                (at(0), 0x501, 0x501, 100, "same-host-direct".into()),
                (at(11), 0x501, 0x503, 100, "after-the-move".into()),
            ]
        );
        assert_eq!(
            outcome(&sim, 0x501, first),
            Some((at(0), Outcome::Delivered))
        );
        assert_eq!(
            outcome(&sim, 0x501, second),
            Some((at(11), Outcome::Delivered))
        );
        assert_eq!(
            route_events(&sim, 0x501, 0x502)
                .into_iter()
                .filter(|(t, e)| *t >= at(10) && matches!(e, RouteEvent::Removed { .. }))
                .count(),
            0,
            "the record is re-routed, not removed"
        );
        assert_eq!(sim.open_links(NodeId(0x501), NodeId(0x502)), 0);
    }
}
