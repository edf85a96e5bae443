//! The retry and hedging flags of `call` and `load --method` (docs/ARCHITECTURE.md §11,
//! "Retries, budget and hedging").

use std::time::Duration;

use clap::Args;
use switchboard_core::{CallSpec, config::Config};

use crate::duration::parse_duration;

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
    /// --idempotent).
    #[arg(long, value_name = "D", value_parser = parse_duration, requires = "idempotent")]
    pub(crate) hedge_after: Option<Duration>,
}

impl RetryArgs {
    /// `spec` with these flags.
    pub(crate) fn spec(&self, mut spec: CallSpec) -> CallSpec {
        spec = spec.idempotent(self.idempotent);
        if let Some(attempts) = self.max_attempts {
            spec = spec.max_attempts(attempts);
        }
        if let Some(delay) = self.hedge_after {
            spec = spec.hedge_after(delay);
        }
        spec
    }

    /// The client node's `core` config with the budget flag.
    pub(crate) fn configure(&self, core: &mut Config) {
        if let Some(percent) = self.retry_budget {
            core.rpc_retry.budget_percent = percent;
        }
    }

    /// Whether any flag was given.
    pub(crate) fn any(&self) -> bool {
        *self != RetryArgs::default()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn the_flags_shape_the_spec_and_the_budget() {
        let args = RetryArgs {
            idempotent: true,
            max_attempts: Some(3),
            retry_budget: Some(50),
            hedge_after: Some(Duration::from_millis(40)),
        };
        let spec = args.spec(CallSpec::new("m", Bytes::new()));
        assert_eq!(
            (spec.idempotent, spec.max_attempts, spec.hedge_after),
            (true, Some(3), Some(Duration::from_millis(40)))
        );
        let mut core = Config::default();
        args.configure(&mut core);
        assert_eq!(core.rpc_retry.budget_percent, 50);
        assert!(args.any());
        assert!(!RetryArgs::default().any());
    }
}
