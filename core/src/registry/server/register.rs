//! Registration and updates: the size limits, the name and id rules, the takeover proof, and
//! the snapshot a registration is answered with (in bounded parts).

use super::{
    ConnId, Entry, EntryKey, Link, ProtocolError, RegistryServer, ServerEvent, ServerOutput, Timer,
};
use crate::{
    ids::NodeId,
    registry::limits::RecordTooLarge,
    time::Instant,
    wire::{self, Bye, ByeReason, HelloAck, RefuseReason, Register, Update, VersionRange},
};

impl RegistryServer {
    pub(super) fn register(&mut self, now: Instant, conn: ConnId, register: Register) {
        let Register {
            incarnation,
            mut discovery,
            mut topology,
            proof,
            watch,
        } = register;
        if self
            .conns
            .get(&conn)
            .is_some_and(|c| c.registered.is_some() || c.watching)
        {
            return self.fail(now, conn, ProtocolError::AlreadyRegistered);
        }
        if watch {
            return self.watch(now, conn);
        }
        let certified = self.conns.get(&conn).and_then(|c| c.certified.as_ref());
        if let Some(certified) = certified.filter(|ids| !ids.contains(&discovery.id)) {
            let error = ProtocolError::NotCertified {
                claimed: discovery.id,
                certified: certified.clone(),
            };
            return self.fail(now, conn, error);
        }
        if let Err(error) = self
            .config
            .record_limits()
            .check(Some(&discovery), topology.as_ref())
        {
            return self.refuse_too_large(now, conn, error);
        }
        let Some(key) = EntryKey::of(&discovery) else {
            return self.fail(now, conn, ProtocolError::IdentityChanged);
        };
        if let Some(t) = &topology
            && t.id != discovery.id
        {
            let error = ProtocolError::TopologyMismatch {
                discovery: discovery.id,
                topology: t.id,
            };
            return self.fail(now, conn, error);
        }
        if let Some((holder, holder_incarnation)) = self.name_holder(&discovery.name, &key) {
            return self.refuse_name(conn, key, discovery.name, holder, holder_incarnation);
        }
        let mut restored = false;
        if let Some(held) = self.entries.get(&key) {
            restored = true;
            // The proof is checked against what the holder published (a hash of a hash of its
            // secret): what the records show does not prove anything. A live holder with an
            // identity is replaced only on proof, even by its own incarnation (which every
            // record shows); without an identity, by its own incarnation alone (a reconnect
            // the registry has not noticed yet). Another incarnation replaces a live holder
            // only when its session is gone (silent for `LIVE_HOLDER_SILENCE`): a holder
            // still heard from is a second copy of the node running, and the newcomer is
            // refused — never both registered in turn.
            let proven = proof.is_some_and(|p| p.proves(&held.discovery.identity));
            let needs_proof =
                held.incarnation != incarnation || !held.discovery.identity.is_empty();
            let heard = |conn| {
                self.conns
                    .get(&conn)
                    .is_some_and(|c| now < c.heard + super::LIVE_HOLDER_SILENCE)
            };
            match held.link {
                Link::Live(other) if held.incarnation != incarnation && heard(other) => {
                    return self.refuse(conn, key, incarnation, held.incarnation, discovery.id);
                }
                Link::Live(_) if needs_proof && !proven => {
                    return self.refuse(conn, key, incarnation, held.incarnation, discovery.id);
                }
                Link::Live(other) => {
                    if held.incarnation != incarnation {
                        self.stats.takeovers += 1;
                        self.event(ServerEvent::TakenOver {
                            replaced: other,
                            key: key.clone(),
                            incarnation: held.incarnation,
                        });
                    }
                    // Same incarnation on a new connection: the old one is dead or stale.
                    self.send(
                        other,
                        &Bye {
                            reason: ByeReason::Replaced,
                        }
                        .into(),
                    );
                    self.out.push_back(ServerOutput::Close { conn: other });
                    self.forget_conn(other);
                }
                Link::Protected { conn: old, .. } => {
                    self.protected.remove(&old);
                    self.timers.cancel(Timer::Protection(old));
                }
            }
        }
        self.revision += 1;
        discovery.revision = self.revision;
        if let Some(t) = topology.as_mut() {
            t.revision = self.revision;
        }
        let type_name = discovery.type_name.clone();
        if let Some(old) = self.entries.get(&key) {
            let old_name = old.discovery.name.clone();
            self.release_name(&key, &old_name);
        }
        if !discovery.name.is_empty() {
            self.names.insert(discovery.name.clone(), key.clone());
        }
        self.entries.insert(
            key.clone(),
            Entry::new(incarnation, discovery, topology, Link::Live(conn)),
        );
        self.timers.cancel(Timer::Access(conn));
        if let Some(timeout) = self.config.heartbeat_timeout {
            self.timers.replace(Timer::Silence(conn), now + timeout);
        }
        let limits = self.config.registered_limits();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.registered = Some((key.clone(), type_name.clone()));
            c.reader.set_limits(limits);
        }
        self.event(ServerEvent::Registered {
            conn,
            key: key.clone(),
            incarnation,
            restored,
        });
        self.send_snapshot(now, conn, Some((&key, &type_name)));
        self.push_put(now, &key, Some(conn));
    }

    /// `conn` watches (a `Register` with the watch flag, `switchboard ls`): it is answered
    /// with the snapshot of every node and then pushed every change, like a node concerned
    /// with everything, but nothing is listed for it — its coming and going is seen by no one.
    /// It may send `Heartbeat`s and `Bye`; an `Update` is refused (`NotRegistered`).
    fn watch(&mut self, now: Instant, conn: ConnId) {
        let limits = self.config.registered_limits();
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.watching = true;
        c.reader.set_limits(limits);
        self.timers.cancel(Timer::Access(conn));
        if let Some(timeout) = self.config.heartbeat_timeout {
            self.timers.replace(Timer::Silence(conn), now + timeout);
        }
        self.event(ServerEvent::Watching { conn });
        self.send_snapshot(now, conn, None);
    }

    /// Answers `conn`'s registration (node `key` of `type_name`) with the snapshot of what it
    /// is concerned with (everything for a watcher, `None`), in parts of at most
    /// `max_snapshot_part` bytes.
    fn send_snapshot(&mut self, now: Instant, conn: ConnId, node: Option<(&EntryKey, &str)>) {
        let entries: Option<alloc::vec::Vec<_>> = self
            .entries
            .iter()
            .filter(|(k, e)| {
                node.is_none_or(|(key, type_name)| {
                    *k == key
                        || self
                            .config
                            .concern
                            .concerns(type_name, &e.discovery.type_name)
                })
            })
            .map(|(_, e)| Some((e.incarnation, e.lost_for(now), e.encoded.as_ref()?)))
            .collect();
        // Each entry's records were serialized when they changed; here they are copied.
        let parts = entries.map(|entries| {
            wire::encode_snapshot_parts_of(
                self.epoch,
                self.revision,
                entries,
                self.config.max_snapshot_part,
            )
        });
        match parts {
            Some(Ok(parts)) => {
                for bytes in parts {
                    self.out.push_back(ServerOutput::Transmit { conn, bytes });
                }
            }
            Some(Err(_)) | None => self.out.push_back(ServerOutput::Close { conn }),
        }
    }

    /// Refuses `conn`'s registration or update for its size: a `HelloAck` with
    /// `RefuseReason::RecordTooLarge` (the limit's name, the size, the limit), close, counted.
    /// A registered node keeps its previous records and goes into protection.
    pub(super) fn refuse_too_large(&mut self, now: Instant, conn: ConnId, error: RecordTooLarge) {
        let ack = HelloAck {
            node: NodeId(error.len as u64),
            incarnation: error.max as u64,
            versions: VersionRange { min: 0, max: 0 },
            name: error.field.as_str(),
            nonce: None,
            proof: None,
            result: Err(RefuseReason::RecordTooLarge),
        };
        self.send(conn, &ack.into());
        self.out.push_back(ServerOutput::Close { conn });
        self.stats.records_too_large += 1;
        self.event(ServerEvent::TooLarge { conn, error });
        self.drop_conn(now, conn, true);
    }

    /// The id and incarnation of the listed node other than `key` holding `name`, if any.
    fn name_holder(&self, name: &str, key: &EntryKey) -> Option<(NodeId, u64)> {
        if name.is_empty() {
            return None;
        }
        let holder = self.names.get(name).filter(|k| *k != key)?;
        let entry = self.entries.get(holder)?;
        Some((entry.discovery.id, entry.incarnation))
    }

    /// Forgets that `key` holds `name` (if it does).
    pub(super) fn release_name(&mut self, key: &EntryKey, name: &str) {
        if self.names.get(name) == Some(key) {
            self.names.remove(name);
        }
    }

    fn refuse_name(
        &mut self,
        conn: ConnId,
        key: EntryKey,
        name: alloc::string::String,
        holder: NodeId,
        holder_incarnation: u64,
    ) {
        let ack = HelloAck {
            node: holder,
            incarnation: holder_incarnation,
            versions: VersionRange { min: 0, max: 0 },
            name: &name,
            nonce: None,
            proof: None,
            result: Err(RefuseReason::NameTaken),
        };
        self.send(conn, &ack.into());
        self.out.push_back(ServerOutput::Close { conn });
        self.stats.names_taken += 1;
        self.event(ServerEvent::NameTaken {
            conn,
            key,
            name,
            holder,
        });
        self.forget_conn(conn);
    }

    fn refuse(&mut self, conn: ConnId, key: EntryKey, incarnation: u64, holder: u64, id: NodeId) {
        let ack = HelloAck {
            node: id,
            incarnation: holder,
            versions: VersionRange { min: 0, max: 0 },
            name: "",
            nonce: None,
            proof: None,
            result: Err(RefuseReason::DuplicateId),
        };
        self.send(conn, &ack.into());
        self.out.push_back(ServerOutput::Close { conn });
        self.stats.duplicate_ids += 1;
        self.event(ServerEvent::Refused {
            conn,
            key,
            incarnation,
            holder,
        });
        self.forget_conn(conn);
    }

    pub(super) fn update(&mut self, now: Instant, conn: ConnId, update: Update) {
        let Some(key) = self
            .conns
            .get(&conn)
            .and_then(|c| c.registered.as_ref())
            .map(|(k, _)| k.clone())
        else {
            return self.fail(now, conn, ProtocolError::NotRegistered);
        };
        let Some(entry) = self.entries.get(&key) else {
            return self.fail(now, conn, ProtocolError::NotRegistered);
        };
        if entry.incarnation != update.incarnation {
            let error = ProtocolError::WrongIncarnation {
                registered: entry.incarnation,
                got: update.incarnation,
            };
            return self.fail(now, conn, error);
        }
        // The records as they would be after the update, measured together.
        let checked = self.config.record_limits().check(
            Some(update.discovery.as_ref().unwrap_or(&entry.discovery)),
            update.topology.as_ref().or(entry.topology.as_ref()),
        );
        if let Err(error) = checked {
            return self.refuse_too_large(now, conn, error);
        }
        if let Some(d) = &update.discovery {
            if EntryKey::of(d).as_ref() != Some(&key) {
                return self.fail(now, conn, ProtocolError::IdentityChanged);
            }
            if let Some((holder, _)) = self.name_holder(&d.name, &key) {
                self.stats.names_taken += 1;
                let error = ProtocolError::NameTaken {
                    name: d.name.clone(),
                    holder,
                };
                return self.fail(now, conn, error);
            }
        }
        if let Some(t) = &update.topology
            && t.id != entry.discovery.id
        {
            let error = ProtocolError::TopologyMismatch {
                discovery: entry.discovery.id,
                topology: t.id,
            };
            return self.fail(now, conn, error);
        }
        self.revision += 1;
        let revision = self.revision;
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        let mut new_type = None;
        if let Some(mut d) = update.discovery {
            if d.name != entry.discovery.name {
                if self.names.get(&entry.discovery.name) == Some(&key) {
                    self.names.remove(&entry.discovery.name);
                }
                if !d.name.is_empty() {
                    self.names.insert(d.name.clone(), key.clone());
                }
            }
            d.revision = revision;
            new_type = Some(d.type_name.clone());
            entry.discovery = d;
        }
        if let Some(mut t) = update.topology {
            t.revision = revision;
            entry.topology = Some(t);
        }
        entry.encode();
        if let (Some(t), Some(c)) = (new_type, self.conns.get_mut(&conn)) {
            c.registered = Some((key.clone(), t));
        }
        self.event(ServerEvent::Updated {
            conn,
            key: key.clone(),
        });
        self.push_put(now, &key, None);
    }
}
