//! Payloads as a person gives them (`--payload TEXT|@FILE|-`, `--payload-hex`,
//! `--payload-base64`) and replies as a person reads them (UTF-8 text when it is, else
//! base64, said so).

use std::io::Read;

use base64::{Engine, engine::general_purpose::STANDARD};
use bytes::Bytes;

use crate::{cli::PayloadArgs, error::CliError};

/// The payload `args` give; `None` when none of the three flags is given.
///
/// # Errors
///
/// An unreadable `@FILE` or standard input, bad hex or base64 — each naming the flag.
pub(crate) fn read_payload(args: PayloadArgs) -> Result<Option<Bytes>, CliError> {
    if let Some(hex) = args.payload_hex {
        return decode_hex(&hex)
            .map(|b| Some(b.into()))
            .map_err(|why| CliError::invalid("payload_hex", why));
    }
    if let Some(b64) = args.payload_base64 {
        return (STANDARD.decode(b64.trim()))
            .map(|b| Some(b.into()))
            .map_err(|e| CliError::invalid("payload_base64", format!("not base64: {e}")));
    }
    let Some(text) = args.payload else {
        return Ok(None);
    };
    if text == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::invalid("payload", format!("reading standard input: {e}")))?;
        return Ok(Some(bytes.into()));
    }
    if let Some(path) = text.strip_prefix('@') {
        return std::fs::read(path)
            .map(|b| Some(b.into()))
            .map_err(|e| CliError::invalid("payload", format!("reading {path}: {e}")));
    }
    Ok(Some(Bytes::from(text.into_bytes())))
}

/// The payload `args` give, required: one of the three flags must be there.
///
/// # Errors
///
/// As [`read_payload`], and none given.
pub(crate) fn required_payload(args: PayloadArgs) -> Result<Bytes, CliError> {
    read_payload(args)?.ok_or_else(|| {
        CliError::invalid(
            "payload",
            "required: give --payload TEXT|@FILE|-, --payload-hex or --payload-base64",
        )
    })
}

/// Hex digits, two per byte, either case.
fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return Err(format!("an odd number of hex digits ({})", text.len()));
    }
    let digit = |at: usize| {
        let c = text.as_bytes()[at];
        (c as char)
            .to_digit(16)
            .map(|d| d as u8)
            .ok_or_else(|| format!("{:?} at {at} is not a hex digit", c as char))
    };
    (0..text.len() / 2)
        .map(|i| Ok((digit(2 * i)? << 4) | digit(2 * i + 1)?))
        .collect()
}

/// How a reply's bytes are printed: the text when they are UTF-8, else their base64 and the
/// encoding named (`"encoding":"base64"`).
pub(crate) fn printable(bytes: &[u8]) -> (String, Option<&'static str>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), None),
        Err(_) => (STANDARD.encode(bytes), Some("base64")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(payload: Option<&str>, hex: Option<&str>, b64: Option<&str>) -> PayloadArgs {
        PayloadArgs {
            payload: payload.map(str::to_owned),
            payload_hex: hex.map(str::to_owned),
            payload_base64: b64.map(str::to_owned),
        }
    }

    #[test]
    fn each_source_gives_its_exact_bytes() {
        let read = |a| read_payload(a).expect("valid");
        assert_eq!(
            read(args(Some("héllo"), None, None)).as_deref(),
            Some("héllo".as_bytes())
        );
        assert_eq!(
            read(args(None, Some("00fF10"), None)).as_deref(),
            Some(&[0, 0xff, 0x10][..])
        );
        assert_eq!(
            read(args(None, None, Some("AP8Q"))).as_deref(),
            Some(&[0, 0xff, 0x10][..])
        );
        assert_eq!(read(args(None, None, None)), None);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("p.bin");
        std::fs::write(&path, [1, 2, 0xfe]).expect("write");
        let at = format!("@{}", path.display());
        assert_eq!(
            read(args(Some(&at), None, None)).as_deref(),
            Some(&[1, 2, 0xfe][..])
        );
    }

    #[test]
    fn bad_sources_name_the_flag() {
        let err = |a| read_payload(a).expect_err("invalid").to_string();
        assert_eq!(
            err(args(None, Some("abc"), None)),
            "payload_hex: an odd number of hex digits (3)"
        );
        assert_eq!(
            err(args(None, Some("0g"), None)),
            "payload_hex: 'g' at 1 is not a hex digit"
        );
        assert!(err(args(None, None, Some("!!"))).starts_with("payload_base64: not base64: "));
        assert!(
            err(args(Some("@/nonexistent/p"), None, None))
                .starts_with("payload: reading /nonexistent/p: No such file")
        );
        assert_eq!(
            required_payload(args(None, None, None))
                .expect_err("missing")
                .to_string(),
            "payload: required: give --payload TEXT|@FILE|-, --payload-hex or --payload-base64"
        );
    }

    #[test]
    fn replies_print_as_text_when_utf8_else_as_base64() {
        assert_eq!(printable(b"pong"), ("pong".to_owned(), None));
        assert_eq!(
            printable(&[0, 0xff, 0x10]),
            ("AP8Q".to_owned(), Some("base64"))
        );
    }
}
