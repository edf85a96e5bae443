//! Size limits of one registration: the whole record and the fields an application fills.
//!
//! The registry re-sends every record in every snapshot and to every watcher, so one record
//! is bounded ([`RecordLimits::max_record`], default [`DEFAULT_MAX_RECORD`] = 64 KiB: the
//! discovery and topology JSON of one registration together), and so are the two fields an
//! application may fill freely: the labels ([`DEFAULT_MAX_LABELS`] = 8 KiB of keys and
//! values, in each record) and the custom data ([`DEFAULT_MAX_CUSTOM_DATA`] = 32 KiB). A
//! record of a typical node is well under 2 KiB, so the defaults leave a wide margin while a
//! registry of 10,000 nodes at the record limit still fits a 640 MiB snapshot — which is why
//! a snapshot travels in bounded parts (see [`crate::registry::server`]).
//!
//! The registry refuses an over-limit `Register` or `Update`
//! ([`RefuseReason::RecordTooLarge`](crate::wire::RefuseReason::RecordTooLarge)); a node refuses
//! to send one
//! ([`Config::validate`](crate::Config::validate) checks the labels, the registry client the
//! whole record).

use crate::discovery::{DiscoveryInfo, TopologyInfo};

/// Default largest registration: discovery and topology JSON together, 64 KiB.
pub const DEFAULT_MAX_RECORD: usize = 64 << 10;

/// Default largest label set (keys and values, in bytes), per record: 8 KiB.
pub const DEFAULT_MAX_LABELS: usize = 8 << 10;

/// Default largest `custom_data` of a discovery record: 32 KiB.
pub const DEFAULT_MAX_CUSTOM_DATA: usize = 32 << 10;

/// The size limits of one registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLimits {
    /// Largest discovery and topology JSON of one registration, together.
    pub max_record: usize,
    /// Largest label set of one record: the lengths of every key and value, summed.
    pub max_labels: usize,
    /// Largest `custom_data` of a discovery record.
    pub max_custom_data: usize,
}

impl Default for RecordLimits {
    fn default() -> Self {
        RecordLimits {
            max_record: DEFAULT_MAX_RECORD,
            max_labels: DEFAULT_MAX_LABELS,
            max_custom_data: DEFAULT_MAX_CUSTOM_DATA,
        }
    }
}

/// Which limit a record broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordField {
    /// The whole record ([`RecordLimits::max_record`]).
    Record,
    /// A label set ([`RecordLimits::max_labels`]).
    Labels,
    /// The custom data ([`RecordLimits::max_custom_data`]).
    CustomData,
    /// A whole frame, refused from its header: larger than anything the registry accepts
    /// from the connection at this point (its size and that limit are frame lengths).
    Frame,
}

impl RecordField {
    /// The field's name as a refusal carries it (`record`, `labels`, `custom_data`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordField::Record => "record",
            RecordField::Labels => "labels",
            RecordField::CustomData => "custom_data",
            RecordField::Frame => "frame",
        }
    }

    /// The field named `name` (as [`as_str`](Self::as_str) writes it).
    #[must_use]
    pub fn from_name(name: &str) -> Option<RecordField> {
        match name {
            "record" => Some(RecordField::Record),
            "labels" => Some(RecordField::Labels),
            "custom_data" => Some(RecordField::CustomData),
            "frame" => Some(RecordField::Frame),
            _ => None,
        }
    }
}

/// A record over one of its limits: which, how large it is, and the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} of {len} bytes exceeds the limit of {max} bytes", field.as_str())]
pub struct RecordTooLarge {
    /// The limit broken.
    pub field: RecordField,
    /// The size found.
    pub len: usize,
    /// The limit.
    pub max: usize,
}

impl RecordLimits {
    /// Checks a registration's records (the fields first, then the whole JSON); `discovery`
    /// `None` checks the topology alone, as an `Update` carrying only it.
    ///
    /// # Errors
    /// The first limit broken.
    pub fn check(
        &self,
        discovery: Option<&DiscoveryInfo>,
        topology: Option<&TopologyInfo>,
    ) -> Result<(), RecordTooLarge> {
        if let Some(d) = discovery {
            self.field(RecordField::CustomData, d.custom_data.len())?;
            self.field(RecordField::Labels, labels_len(&d.metadata.labels))?;
        }
        if let Some(t) = topology {
            self.field(RecordField::Labels, labels_len(&t.data.label))?;
        }
        // The JSON is measured only once the fields are known to be small, and each record
        // is at most the sum of the field limits plus fixed fields, so this stays cheap.
        let len =
            discovery.map_or(0, |d| d.to_json().len()) + topology.map_or(0, |t| t.to_json().len());
        self.field(RecordField::Record, len)
    }

    fn field(&self, field: RecordField, len: usize) -> Result<(), RecordTooLarge> {
        let max = match field {
            RecordField::Record => self.max_record,
            RecordField::Labels => self.max_labels,
            RecordField::CustomData => self.max_custom_data,
            RecordField::Frame => usize::MAX,
        };
        if len > max {
            return Err(RecordTooLarge { field, len, max });
        }
        Ok(())
    }
}

/// The bytes of a label set: every key and value, summed.
#[must_use]
pub fn labels_len(labels: &crate::discovery::Labels) -> usize {
    labels.iter().map(|(k, v)| k.len() + v.len()).sum()
}
