//! Flags every one-shot client command shares (`send`, `call`, `broadcast`): how it joins the
//! tree (`--upstream`), where its payload comes from, and how it prints its result (`-o`).

use clap::{Args, ValueEnum};

/// How a light client joins the topology tree.
#[derive(Debug, Args)]
pub(crate) struct JoinArgs {
    /// Join under this proxy (its id) and send through it, to reach nodes behind it; without
    /// it the client links to its targets directly [default: none].
    #[arg(long, value_name = "ID", value_parser = super::non_negative::<u64>)]
    pub(crate) upstream: Option<u64>,
}

/// Where a message's or a call's payload comes from: at most one of the three flags.
#[derive(Debug, Args)]
#[group(id = "payload_source", multiple = false)]
pub(crate) struct PayloadArgs {
    /// The payload: TEXT (its UTF-8 bytes), @FILE (the file's bytes) or - (standard input).
    #[arg(long, value_name = "TEXT|@FILE|-", allow_hyphen_values = true)]
    pub(crate) payload: Option<String>,
    /// The payload as hex digits (two per byte, e.g. 00ff10).
    #[arg(long, value_name = "HEX")]
    pub(crate) payload_hex: Option<String>,
    /// The payload as standard base64 (RFC 4648, padded).
    #[arg(long, value_name = "B64")]
    pub(crate) payload_base64: Option<String>,
}

/// How a client command prints its result.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Output format: one JSON line, or one line of text for a person.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Json)]
    pub(crate) output: Format,
}

/// `-o` of the client commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// One line of text.
    Text,
    /// One JSON object on one line.
    Json,
}
