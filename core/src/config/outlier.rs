//! Outlier ejection's settings ([`OutlierConfig`]): Envoy's outlier detection defaults
//! (docs/ARCHITECTURE.md §11, "Outlier ejection"). In a [`Config`](super::Config) file they
//! are the flat `outlier_*` keys; [`Config::outlier`](super::Config::outlier) gathers them.

use super::ConfigError;
use crate::time::Duration;

/// How a caller ejects a server that keeps failing its calls (see
/// [`Outliers`](crate::select::Outliers)). `OutlierConfig::default()` holds the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutlierConfig {
    /// Whether servers are ejected at all; off, outcomes are not even recorded. Default on.
    /// Key `outlier_ejection`.
    pub enabled: bool,
    /// Consecutive failed attempts that eject a server (Envoy's `consecutive_5xx`). At least
    /// 1. Default 5. Key `outlier_consecutive_failures`.
    pub consecutive_failures: u32,
    /// A server's `n`-th ejection in a row lasts `n ×` this (Envoy's `base_ejection_time`).
    /// Default 30 s. Key `outlier_base_ejection_time_ms`.
    pub base_ejection_time: Duration,
    /// Cap on one ejection's length; at least the base. Default 300 s (Envoy's
    /// `max_ejection_time`). Key `outlier_max_ejection_time_ms`.
    pub max_ejection_time: Duration,
    /// Most servers of one filter (a method's servers) ejected at once, in percent of its
    /// members, but always at least one (as Envoy since 1.20). 0..=100. Default 10. Key
    /// `outlier_max_ejection_percent`.
    pub max_ejection_percent: u32,
    /// The success-rate window, and how long a restored server must stay un-ejected for its
    /// ejection count to drop by one (Envoy's `interval`). Default 10 s. Key
    /// `outlier_interval_ms`.
    pub interval: Duration,
    /// A server whose share of successful attempts within one interval falls below this
    /// percentage, over at least `success_rate_min_requests` attempts, is ejected; 0 = the
    /// rule is off (the default, like Envoy's `enforcing_failure_percentage`). 0..=100. Key
    /// `outlier_success_rate_percent`.
    pub success_rate_percent: u32,
    /// Attempts one interval needs before the success-rate rule judges it. At least 1.
    /// Default 100 (Envoy's `success_rate_request_volume`). Key
    /// `outlier_success_rate_min_requests`.
    pub success_rate_min_requests: u32,
}

impl Default for OutlierConfig {
    fn default() -> OutlierConfig {
        OutlierConfig {
            enabled: true,
            consecutive_failures: 5,
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_percent: 10,
            interval: Duration::from_secs(10),
            success_rate_percent: 0,
            success_rate_min_requests: 100,
        }
    }
}

impl OutlierConfig {
    /// Ejection switched off.
    #[must_use]
    pub fn disabled() -> OutlierConfig {
        OutlierConfig {
            enabled: false,
            ..OutlierConfig::default()
        }
    }

    /// Checks the settings (also when ejection is off: a file's values stay valid when it is
    /// switched on).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Zero`] for a zero count, time or interval,
    /// [`ConfigError::PercentOutOfRange`] for a percentage above 100,
    /// [`ConfigError::OutlierMaxBelowBase`] for a cap below the base time.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let zero = |field| Err(ConfigError::Zero { field });
        if self.consecutive_failures == 0 {
            return zero("outlier_consecutive_failures");
        }
        if self.base_ejection_time.is_zero() {
            return zero("outlier_base_ejection_time_ms");
        }
        if self.interval.is_zero() {
            return zero("outlier_interval_ms");
        }
        if self.success_rate_min_requests == 0 {
            return zero("outlier_success_rate_min_requests");
        }
        if self.max_ejection_time < self.base_ejection_time {
            return Err(ConfigError::OutlierMaxBelowBase {
                base: self.base_ejection_time,
                max: self.max_ejection_time,
            });
        }
        for (field, percent) in [
            ("outlier_max_ejection_percent", self.max_ejection_percent),
            ("outlier_success_rate_percent", self.success_rate_percent),
        ] {
            if percent > 100 {
                return Err(ConfigError::PercentOutOfRange { field, percent });
            }
        }
        Ok(())
    }
}
