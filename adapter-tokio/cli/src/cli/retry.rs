//! The retry and hedging flags of `call` and `load --method` (docs/ARCHITECTURE.md §11,
//! "Retries, budget and hedging").

use clap::Args;
use switchboard_core::{CallSpec, HedgeAfter, config::Config};

use crate::{duration::parse_duration, error::CliError};

/// `--idempotent`, `--max-attempts`, `--retry-budget`, `--hedge-after`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct RetryArgs {
    /// Mark the calls idempotent: retried after any failure (not only one proving the
    /// request never ran), at another server, and allowed to hedge.
    #[arg(long)]
    pub(crate) idempotent: bool,
    /// Most attempts per call, the first included (1: never retried) [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_attempts: Option<u32>,
    /// The retry budget: retries allowed in percent of calls, on top of 10 per second over
    /// 10 s (0: only those) [default: 20; config file: [core.rpc_retry] budget_percent].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub(crate) retry_budget: Option<u32>,
    /// Send a second request to another server when no reply came D after the first (needs
    /// --idempotent): a duration (40ms), or p95 for the method's p95 as this node measures
    /// it (no hedge until 20 replies of the method came).
    #[arg(long, value_name = "D|p95", value_parser = parse_hedge_after)]
    pub(crate) hedge_after: Option<HedgeAfter>,
}

/// Parses a `--hedge-after` value (or the load file's `hedge_after`): a duration, or `p95`.
///
/// # Errors
///
/// Neither a duration nor `p95`; the message quotes the text.
pub(crate) fn parse_hedge_after(text: &str) -> Result<HedgeAfter, String> {
    if text == "p95" {
        return Ok(HedgeAfter::MethodP95);
    }
    parse_duration(text)
        .map(HedgeAfter::Delay)
        .map_err(|why| format!("neither a duration nor p95: {why}"))
}

impl RetryArgs {
    /// `spec` with these flags.
    pub(crate) fn spec(&self, mut spec: CallSpec) -> CallSpec {
        spec = spec.idempotent(self.idempotent);
        if let Some(attempts) = self.max_attempts {
            spec = spec.max_attempts(attempts);
        }
        if self.hedge_after.is_some() {
            spec.hedge_after = self.hedge_after;
        }
        spec
    }

    /// Checks what clap cannot see across the flags and the load file: a hedge needs an
    /// idempotent call.
    ///
    /// # Errors
    ///
    /// `hedge_after` without `idempotent`.
    pub(crate) fn check(&self) -> Result<(), CliError> {
        if self.hedge_after.is_some() && !self.idempotent {
            return Err(CliError::invalid(
                "hedge_after",
                "needs idempotent (a hedge may run the call twice)",
            ));
        }
        Ok(())
    }

    /// The client node's `core` config with the budget flag.
    pub(crate) fn configure(&self, core: &mut Config) {
        if let Some(percent) = self.retry_budget {
            core.rpc_retry.budget_percent = percent;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;

    use super::*;

    #[test]
    fn the_flags_shape_the_spec_and_the_budget() {
        let args = RetryArgs {
            idempotent: true,
            max_attempts: Some(3),
            retry_budget: Some(50),
            hedge_after: Some(HedgeAfter::Delay(Duration::from_millis(40))),
        };
        let spec = args.spec(CallSpec::new("m", Bytes::new()));
        assert_eq!(
            (spec.idempotent, spec.max_attempts, spec.hedge_after),
            (
                true,
                Some(3),
                Some(HedgeAfter::Delay(Duration::from_millis(40)))
            )
        );
        let p95 = RetryArgs {
            hedge_after: Some(HedgeAfter::MethodP95),
            ..args.clone()
        };
        let spec = p95.spec(CallSpec::new("m", Bytes::new()));
        assert_eq!(spec.hedge_after, Some(HedgeAfter::MethodP95));
        let mut core = Config::default();
        args.configure(&mut core);
        assert_eq!(core.rpc_retry.budget_percent, 50);
    }

    #[test]
    fn hedge_after_is_a_duration_or_p95() {
        assert_eq!(
            parse_hedge_after("40ms"),
            Ok(HedgeAfter::Delay(Duration::from_millis(40)))
        );
        assert_eq!(parse_hedge_after("p95"), Ok(HedgeAfter::MethodP95));
        assert_eq!(
            parse_hedge_after("p99"),
            Err(
                "neither a duration nor p95: an unknown unit in \"p99\" (write e.g. 250ms, \
                 5s, 1.5s, 1h30m)"
                    .to_owned()
            )
        );
        assert_eq!(
            parse_hedge_after("40"),
            Err(
                "neither a duration nor p95: no unit in \"40\" (write e.g. 250ms, 5s, 1.5s, \
                 1h30m)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_hedge_needs_an_idempotent_call() {
        let args = RetryArgs {
            hedge_after: Some(HedgeAfter::MethodP95),
            ..RetryArgs::default()
        };
        assert_eq!(
            args.check().expect_err("not idempotent").to_string(),
            "hedge_after: needs idempotent (a hedge may run the call twice)"
        );
        let idempotent = RetryArgs {
            idempotent: true,
            ..args
        };
        assert!(idempotent.check().is_ok());
    }

    #[test]
    fn the_flag_takes_p95_and_refuses_a_bad_value() {
        use clap::Parser;

        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            retry: RetryArgs,
        }
        let cli = Cli::try_parse_from(["x", "--idempotent", "--hedge-after", "p95"])
            .expect("valid flags");
        assert_eq!(cli.retry.hedge_after, Some(HedgeAfter::MethodP95));
        let Err(error) = Cli::try_parse_from(["x", "--idempotent", "--hedge-after", "p90"]) else {
            panic!("p90 is refused");
        };
        assert_eq!(
            error.to_string().lines().next(),
            Some(
                "error: invalid value 'p90' for '--hedge-after <D|p95>': neither a duration nor \
                 p95: an unknown unit in \"p90\" (write e.g. 250ms, 5s, 1.5s, 1h30m)"
            )
        );
    }
}
