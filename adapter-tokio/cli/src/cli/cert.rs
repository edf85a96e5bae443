//! `switchboard cert ca` and `switchboard cert node`: the flags.

use std::{net::IpAddr, path::PathBuf};

use clap::{Args, Subcommand};

/// What `switchboard cert` issues.
#[derive(Debug, Subcommand)]
pub(crate) enum CertCommand {
    /// Write a new cluster CA: DIR/ca.pem and DIR/ca.key (mode 0600); never overwrites.
    #[command(
        after_help = "Prints one line: {\"ca\":\"DIR/ca.pem\",\"ca_key\":\"DIR/ca.key\"}.\n\n\
        Example:\n  switchboard cert ca --out pki"
    )]
    Ca(CertCaArgs),
    /// Write a certificate for node ID, signed by the CA in --ca-dir: DIR/node-ID.pem and
    /// DIR/node-ID.key (mode 0600); never overwrites.
    #[command(after_help = "The certificate names the node id in a SAN URI \
        urn:switchboard:node:ID: a peer then refuses a link from this certificate that \
        claims any other id. It carries both the serverAuth and clientAuth extended key \
        usages (every node dials and accepts). Without --id (e.g. for a registry or a client \
        that is no node) it names no id and --name gives the file names.\n\n\
        Prints one line: {\"cert\":\"DIR/node-ID.pem\",\"key\":\"DIR/node-ID.key\",\
        \"ca\":\"CA_DIR/ca.pem\",\"node_id\":ID|null}.\n\n\
        Examples:\n  \
        switchboard cert node --id 7 --ca-dir pki --out pki\n  \
        switchboard cert node --name registry --ca-dir pki --out pki --dns registry.internal\n  \
        switchboard node --id 7 ... --tls-cert pki/node-7.pem --tls-key pki/node-7.key \
        --tls-ca pki/ca.pem --tls-require-node-id")]
    Node(CertNodeArgs),
}

/// `switchboard cert ca`.
#[derive(Debug, Args)]
pub(crate) struct CertCaArgs {
    /// Directory to write ca.pem and ca.key into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// The CA's common name.
    #[arg(long, value_name = "NAME", default_value = "switchboard cluster CA")]
    pub(crate) name: String,
    /// Days the CA is valid, from now.
    #[arg(long, value_name = "DAYS", default_value_t = 3650,
          value_parser = clap::value_parser!(u32).range(1..=36500))]
    pub(crate) days: u32,
}

/// `switchboard cert node`.
#[derive(Debug, Args)]
pub(crate) struct CertNodeArgs {
    /// The node id the certificate names (SAN URI urn:switchboard:node:ID; non-zero).
    #[arg(long, value_name = "ID", value_parser = super::non_negative::<u64>,
          required_unless_present = "name")]
    pub(crate) id: Option<u64>,
    /// The certificate's common name and file name [default: node-ID].
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Directory holding the CA (ca.pem and ca.key, from `switchboard cert ca`).
    #[arg(long, value_name = "DIR")]
    pub(crate) ca_dir: PathBuf,
    /// Directory to write the certificate and key into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// A DNS name to add as a SAN (repeatable; names are not checked by switchboard, but
    /// other TLS clients may want one).
    #[arg(long, value_name = "NAME")]
    pub(crate) dns: Vec<String>,
    /// An IP address to add as a SAN (repeatable).
    #[arg(long, value_name = "ADDR")]
    pub(crate) ip: Vec<IpAddr>,
    /// Days the certificate is valid, from now.
    #[arg(long, value_name = "DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u32).range(1..=36500))]
    pub(crate) days: u32,
}
