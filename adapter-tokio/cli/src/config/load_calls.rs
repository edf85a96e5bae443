//! `switchboard load --method M`: the call half of the load options (what is called, how the
//! server is picked, with what payload, how many at once), checked like the message half.

use std::time::Duration;

use bytes::Bytes;
use switchboard_core::{Select, select::Mode, wire::MAX_DATA_PAYLOAD};

use crate::{
    cli::{RetryArgs, parse_hedge_after},
    error::CliError,
    payload::SEQ_BYTES,
    run_call::check_method,
};

/// What each call of a call load carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallPayload {
    /// The same bytes every call (`--payload TEXT`; empty without `--payload` or `--size`).
    Text(Bytes),
    /// The call's sequence number in `size` bytes, as message loads do (`--size B`).
    Numbered {
        /// Payload bytes (≥ 8).
        size: usize,
    },
}

/// A load of calls instead of messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallLoad {
    /// The method called.
    pub(crate) method: String,
    /// How each call picks its server: `--select`, or by hash of `--key` [default: round
    /// robin].
    pub(crate) select: Select,
    /// What each call carries.
    pub(crate) payload: CallPayload,
    /// Calls in flight at most.
    pub(crate) concurrency: usize,
    /// Each call's budget (`None` = the core's `rpc_call_timeout`).
    pub(crate) timeout: Option<Duration>,
    /// Each call's wait for a server (`None` = the core's `rpc_grace`).
    pub(crate) grace: Option<Duration>,
    /// Each call's retries and hedging.
    pub(crate) retry: crate::cli::RetryArgs,
}

/// The call flags, merged over the config file by the caller.
#[derive(Debug, Default)]
pub(crate) struct CallFlags {
    /// `method`.
    pub(crate) method: String,
    /// `concurrency` [default: 1].
    pub(crate) concurrency: Option<usize>,
    /// `select`.
    pub(crate) select: Option<Mode>,
    /// `key`.
    pub(crate) key: Option<String>,
    /// `payload`.
    pub(crate) payload: Option<String>,
    /// `size`.
    pub(crate) size: Option<usize>,
    /// `timeout`.
    pub(crate) timeout: Option<Duration>,
    /// `grace`.
    pub(crate) grace: Option<Duration>,
    /// `idempotent`, `max_attempts`, `hedge_after` (`retry_budget` shapes the node).
    pub(crate) retry: crate::cli::RetryArgs,
}

impl CallLoad {
    /// Checks the call flags.
    ///
    /// # Errors
    ///
    /// A bad method name, a zero concurrency or timeout, both a payload and a size, a size
    /// out of range.
    pub(crate) fn resolve(flags: CallFlags) -> Result<CallLoad, CliError> {
        check_method("method", &flags.method)?;
        let concurrency = flags.concurrency.unwrap_or(1);
        if concurrency == 0 {
            return Err(CliError::invalid(
                "concurrency",
                "must be greater than zero",
            ));
        }
        crate::duration::nonzero_timeout(flags.timeout)?;
        let payload = match (flags.payload, flags.size) {
            (Some(_), Some(_)) => {
                return Err(CliError::invalid(
                    "payload",
                    "give either payload or size, not both",
                ));
            }
            (Some(text), None) => CallPayload::Text(Bytes::from(text.into_bytes())),
            (None, Some(size)) => CallPayload::Numbered {
                size: check_size(size)?,
            },
            (None, None) => CallPayload::Text(Bytes::new()),
        };
        Ok(CallLoad {
            method: flags.method,
            select: crate::selection::selection(flags.select, flags.key, "key")?,
            payload,
            concurrency,
            timeout: flags.timeout,
            grace: flags.grace,
            retry: flags.retry,
        })
    }
}

/// The per-call retry keys of the load file (`idempotent`, `max_attempts`, `retry_budget`,
/// `hedge_after`), which the flags override.
#[derive(Debug, Default)]
pub(crate) struct RetryKeys {
    /// `idempotent`.
    pub(crate) idempotent: Option<bool>,
    /// `max_attempts` (at least 1).
    pub(crate) max_attempts: Option<u32>,
    /// `retry_budget` (percent, 0 to 1000).
    pub(crate) retry_budget: Option<u32>,
    /// `hedge_after`: a duration, or `"p95"`.
    pub(crate) hedge_after: Option<String>,
}

impl RetryKeys {
    /// The flags `flags` over these keys, checked as the flags are: a flag given wins (the
    /// `--idempotent` switch can only turn `idempotent` on).
    ///
    /// # Errors
    ///
    /// `max_attempts` 0, `retry_budget` above 1000, a `hedge_after` that is neither a duration
    /// nor `"p95"`, or a hedge (from either) on a call not idempotent (from either).
    pub(crate) fn under(self, flags: RetryArgs) -> Result<RetryArgs, CliError> {
        if self.max_attempts == Some(0) {
            return Err(CliError::invalid(
                "max_attempts",
                "must be at least 1 (1: never retried)",
            ));
        }
        if let Some(percent) = self.retry_budget.filter(|&p| p > 1000) {
            return Err(CliError::invalid(
                "retry_budget",
                format!("must be between 0 and 1000 percent, got {percent}"),
            ));
        }
        let hedge_after = self
            .hedge_after
            .map(|text| {
                parse_hedge_after(&text).map_err(|why| CliError::invalid("hedge_after", why))
            })
            .transpose()?;
        let merged = RetryArgs {
            idempotent: flags.idempotent || self.idempotent.unwrap_or(false),
            max_attempts: flags.max_attempts.or(self.max_attempts),
            retry_budget: flags.retry_budget.or(self.retry_budget),
            hedge_after: flags.hedge_after.or(hedge_after),
        };
        merged.check()?;
        Ok(merged)
    }
}

/// Checks a `size`: room for the sequence number, and no more than a frame carries.
///
/// # Errors
///
/// Below [`SEQ_BYTES`] or above [`MAX_DATA_PAYLOAD`].
pub(crate) fn check_size(size: usize) -> Result<usize, CliError> {
    if size < SEQ_BYTES {
        return Err(CliError::invalid(
            "size",
            format!("must be at least {SEQ_BYTES} bytes (the sequence number), got {size}"),
        ));
    }
    if size > MAX_DATA_PAYLOAD {
        return Err(CliError::invalid(
            "size",
            format!(
                "must be at most {MAX_DATA_PAYLOAD} bytes (the largest payload a frame \
                 carries), got {size}"
            ),
        ));
    }
    Ok(size)
}

/// Parses a duration given in the config file (`timeout = "5s"`), naming its key.
///
/// # Errors
///
/// The text is not a duration.
pub(crate) fn file_duration(
    field: &str,
    text: Option<String>,
) -> Result<Option<Duration>, CliError> {
    text.map(|t| crate::duration::parse_duration(&t).map_err(|why| CliError::invalid(field, why)))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(method: &str) -> CallFlags {
        CallFlags {
            method: method.to_owned(),
            ..CallFlags::default()
        }
    }

    #[test]
    fn a_call_load_defaults_to_one_at_a_time_round_robin_and_an_empty_payload() {
        assert_eq!(
            CallLoad::resolve(flags("echo")).expect("valid"),
            CallLoad {
                method: "echo".to_owned(),
                select: Select::RoundRobin,
                payload: CallPayload::Text(Bytes::new()),
                concurrency: 1,
                timeout: None,
                grace: None,
                retry: crate::cli::RetryArgs::default(),
            }
        );
        let keyed = CallLoad::resolve(CallFlags {
            key: Some("k".to_owned()),
            size: Some(16),
            concurrency: Some(8),
            ..flags("sleep")
        })
        .expect("valid");
        assert_eq!(keyed.select, Select::Hash(Bytes::from_static(b"k")));
        assert_eq!(keyed.payload, CallPayload::Numbered { size: 16 });
        assert_eq!(keyed.concurrency, 8);
    }

    #[test]
    fn bad_call_flags_name_the_flag() {
        let error = |f: CallFlags| CallLoad::resolve(f).expect_err("invalid").to_string();
        assert!(error(flags("a b")).starts_with("method: "));
        assert_eq!(
            error(CallFlags {
                concurrency: Some(0),
                ..flags("echo")
            }),
            "concurrency: must be greater than zero"
        );
        assert_eq!(
            error(CallFlags {
                payload: Some("x".to_owned()),
                size: Some(8),
                ..flags("echo")
            }),
            "payload: give either payload or size, not both"
        );
        assert_eq!(
            error(CallFlags {
                size: Some(3),
                ..flags("echo")
            }),
            "size: must be at least 8 bytes (the sequence number), got 3"
        );
        assert_eq!(
            file_duration("timeout", Some("5".to_owned()))
                .expect_err("no unit")
                .to_string(),
            "timeout: no unit in \"5\" (write e.g. 250ms, 5s, 1.5s, 1h30m)"
        );
    }
}
