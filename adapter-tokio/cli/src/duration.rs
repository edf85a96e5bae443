//! Durations as people write them on the command line: a decimal number and a unit, `ms`,
//! `s` or `m` (`250ms`, `5s`, `1.5s`, `2m`), exact to the microsecond.

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

/// Parses `text` as `<decimal><unit>` with unit `ms`, `s` or `m`; digits below the microsecond
/// are refused rather than rounded.
///
/// # Errors
///
/// A missing or unknown unit, a malformed number, too many decimals, or more than a day; the
/// message quotes the text.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| Err(format!("{why} in {text:?} (write e.g. 250ms, 5s, 1.5s)"));
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let micros_per_unit: u128 = match unit {
        "ms" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "" => return bad("no unit"),
        _ => return bad("an unknown unit"),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return bad("a malformed number");
    }
    if fraction.contains('.') {
        return bad("a malformed number");
    }
    let Ok(whole) = whole.parse::<u128>() else {
        return bad("too large a number");
    };
    // The fraction in units of 10^-digits; exact when it ends on a whole microsecond.
    let digits = u32::try_from(fraction.len()).unwrap_or(u32::MAX);
    let Some(scale) = 10u128.checked_pow(digits) else {
        return bad("too many decimals");
    };
    let fraction_value = if fraction.is_empty() {
        0
    } else {
        match fraction.parse::<u128>() {
            Ok(value) => value,
            Err(_) => return bad("too many decimals"),
        }
    };
    let Some(fraction_scaled) = fraction_value.checked_mul(micros_per_unit) else {
        return bad("too many decimals");
    };
    if fraction_scaled % scale != 0 {
        return bad("a precision finer than a microsecond");
    }
    let micros = whole
        .checked_mul(micros_per_unit)
        .and_then(|m| m.checked_add(fraction_scaled / scale));
    match micros.and_then(|m| u64::try_from(m).ok()) {
        Some(m) if Duration::from_micros(m) <= MAX_DURATION => Ok(Duration::from_micros(m)),
        _ => bad("more than a day"),
    }
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
    }

    #[test]
    fn bad_durations_say_what_is_wrong_and_quote_the_text() {
        assert_eq!(
            parse_duration("5"),
            Err("no unit in \"5\" (write e.g. 250ms, 5s, 1.5s)".to_owned())
        );
        for (text, why) in [
            ("5h", "an unknown unit"),
            ("5 s", "an unknown unit"),
            ("-5s", "an unknown unit"),
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
}
