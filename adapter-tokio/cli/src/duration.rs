//! Durations as people write them on the command line: decimal numbers with units `h`, `m`,
//! `s`, `ms`, `us`, largest first (`250ms`, `5s`, `1.5s`, `2m`, `1h30m`), exact to the
//! microsecond.

use std::time::Duration;

/// The longest duration accepted: one day.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// A `--timeout` flag's value: absent stays absent (the core's default), zero is refused.
///
/// # Errors
///
/// A zero duration, naming the field `timeout`.
pub(crate) fn nonzero_timeout(
    timeout: Option<Duration>,
) -> Result<Option<Duration>, crate::error::CliError> {
    match timeout {
        Some(t) if t.is_zero() => Err(crate::error::CliError::invalid(
            "timeout",
            "must be greater than zero",
        )),
        other => Ok(other),
    }
}

/// A `--timeout` given as a duration or, deprecated, as `--timeout-ms` (a warning line on
/// stderr says so); absent stays absent, zero is refused.
///
/// # Errors
///
/// A zero duration, naming the flag given.
pub(crate) fn timeout_or_ms(
    timeout: Option<Duration>,
    timeout_ms: Option<u64>,
) -> Result<Option<Duration>, crate::error::CliError> {
    if let Some(ms) = timeout_ms {
        eprintln!("warning: --timeout-ms is deprecated; write --timeout {ms}ms");
        if ms == 0 {
            return Err(crate::error::CliError::invalid(
                "timeout_ms",
                "must be greater than zero",
            ));
        }
        return Ok(Some(Duration::from_millis(ms)));
    }
    nonzero_timeout(timeout)
}

/// A `--wait-known` value in seconds: a duration (`10s`, `1.5s`, `500ms`) or, deprecated, a
/// bare number of seconds (a warning line on stderr says so).
///
/// # Errors
///
/// As [`parse_duration`] when `text` is not a bare number.
pub(crate) fn parse_seconds_or_duration(text: &str) -> Result<f64, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        eprintln!("warning: a bare number of seconds is deprecated; write {text}s");
        return Ok(seconds);
    }
    parse_duration(text).map(|d| d.as_secs_f64())
}

/// Parses `text` as one or more `<decimal><unit>` parts with units `h`, `m`, `s`, `ms` or
/// `us`, largest first and each at most once (`250ms`, `5s`, `1.5s`, `2m`, `1h30m`,
/// `1m30.5s`); digits below the microsecond are refused rather than rounded.
///
/// # Errors
///
/// A missing or unknown unit, units out of order or repeated, a malformed number, a negative
/// sign, too many decimals, or more than a day; the message quotes the text.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| {
        Err(format!(
            "{why} in {text:?} (write e.g. 250ms, 5s, 1.5s, 1h30m)"
        ))
    };
    if text.starts_with('-') {
        return bad("a negative duration");
    }
    let mut rest = text;
    let mut micros: u128 = 0;
    let mut last_unit = u128::MAX;
    loop {
        let split = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(split);
        let unit_len = tail
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let micros_per_unit: u128 = match unit {
            "h" => 3_600_000_000,
            "m" => 60_000_000,
            "s" => 1_000_000,
            "ms" => 1_000,
            "us" => 1,
            "" if tail.is_empty() => return bad("no unit"),
            _ => return bad("an unknown unit"),
        };
        if micros_per_unit >= last_unit {
            return bad("units out of order or repeated");
        }
        last_unit = micros_per_unit;
        micros = match part_micros(number, micros_per_unit) {
            Ok(part) => micros.saturating_add(part),
            Err(why) => return bad(why),
        };
        if tail.is_empty() {
            break;
        }
        rest = tail;
    }
    match u64::try_from(micros) {
        Ok(m) if Duration::from_micros(m) <= MAX_DURATION => Ok(Duration::from_micros(m)),
        _ => bad("more than a day"),
    }
}

/// One part's microseconds: `number` (a decimal) times `micros_per_unit`, exactly.
fn part_micros(number: &str, micros_per_unit: u128) -> Result<u128, &'static str> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return Err("a malformed number");
    }
    if fraction.contains('.') {
        return Err("a malformed number");
    }
    let Ok(whole) = whole.parse::<u128>() else {
        return Err("too large a number");
    };
    // The fraction in units of 10^-digits; exact when it ends on a whole microsecond.
    let digits = u32::try_from(fraction.len()).unwrap_or(u32::MAX);
    let Some(scale) = 10u128.checked_pow(digits) else {
        return Err("too many decimals");
    };
    let fraction_value = if fraction.is_empty() {
        0
    } else {
        fraction.parse::<u128>().map_err(|_| "too many decimals")?
    };
    let Some(fraction_scaled) = fraction_value.checked_mul(micros_per_unit) else {
        return Err("too many decimals");
    };
    if fraction_scaled % scale != 0 {
        return Err("a precision finer than a microsecond");
    }
    whole
        .checked_mul(micros_per_unit)
        .and_then(|m| m.checked_add(fraction_scaled / scale))
        .ok_or("more than a day")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_decimal_number_and_a_unit() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0.25ms"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("86400s"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("1m30.5s"), Ok(Duration::from_millis(90_500)));
        assert_eq!(parse_duration("24h"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("2s500ms"), Ok(Duration::from_millis(2_500)));
        assert_eq!(parse_duration("750us"), Ok(Duration::from_micros(750)));
    }

    #[test]
    fn bad_durations_say_what_is_wrong_and_quote_the_text() {
        assert_eq!(
            parse_duration("5"),
            Err("no unit in \"5\" (write e.g. 250ms, 5s, 1.5s, 1h30m)".to_owned())
        );
        for (text, why) in [
            ("5d", "an unknown unit"),
            ("5 s", "an unknown unit"),
            ("-5s", "a negative duration"),
            ("-1s", "a negative duration"),
            ("30m1h", "units out of order or repeated"),
            ("1s1s", "units out of order or repeated"),
            ("1h30", "no unit"),
            ("24h1s", "more than a day"),
            ("", "no unit"),
            ("s", "a malformed number"),
            (".5s", "a malformed number"),
            ("5.s", "a malformed number"),
            ("1.2.3s", "a malformed number"),
            ("0.0001ms", "a precision finer than a microsecond"),
            ("86401s", "more than a day"),
            (
                "99999999999999999999999999999999999999999s",
                "too large a number",
            ),
        ] {
            let e = parse_duration(text).expect_err(text);
            assert!(e.starts_with(why), "{text}: {e}");
        }
    }

    #[test]
    fn wait_known_takes_a_duration_or_bare_seconds_and_timeouts_their_deprecated_ms() {
        assert_eq!(parse_seconds_or_duration("1.5s"), Ok(1.5));
        assert_eq!(parse_seconds_or_duration("500ms"), Ok(0.5));
        assert_eq!(parse_seconds_or_duration("2"), Ok(2.0));
        assert!(
            parse_seconds_or_duration("2d")
                .expect_err("2d")
                .starts_with("an unknown unit")
        );
        let five = Some(Duration::from_secs(5));
        assert_eq!(timeout_or_ms(five, None).expect("valid"), five);
        assert_eq!(timeout_or_ms(None, Some(5000)).expect("valid"), five);
        assert_eq!(timeout_or_ms(None, None).expect("valid"), None);
        let zero = |t, ms| timeout_or_ms(t, ms).expect_err("zero").to_string();
        assert_eq!(zero(None, Some(0)), "timeout_ms: must be greater than zero");
        assert_eq!(
            zero(Some(Duration::ZERO), None),
            "timeout: must be greater than zero"
        );
    }
}
