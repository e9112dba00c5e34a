//! Durations as scenario files write them: a decimal number and a unit,
//! `250ms`, `15s`, `1.5s`, `2m`, `1h`. Timelines are compared at millisecond
//! precision, so anything finer is rejected rather than silently rounded.

use std::time::Duration;

/// Why a duration string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration `{text}`: {reason}")]
pub struct DurationError {
    pub text: String,
    pub reason: &'static str,
}

const EXPECTED: &str =
    "expected a number and a unit ms, s, m or h, e.g. `250ms`, `15s`, `1.5s`, `2m`";

/// Parses `250ms`, `15s`, `1.5s`, `2m`, `1h`, `0s` (ms precision).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let error = |reason| DurationError {
        text: text.to_string(),
        reason,
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or(error(EXPECTED))?;
    let (number, unit) = text.split_at(split);
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(error(EXPECTED)),
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) {
        return Err(error(EXPECTED));
    }
    if number.ends_with('.') {
        return Err(error(EXPECTED));
    }
    let too_long = || error("too long");
    let whole: u64 = whole.parse().map_err(|_| too_long())?;
    let mut ms = whole.checked_mul(unit_ms).ok_or_else(too_long)?;
    // The fraction in units of 10^-len, scaled to ms; it must come out whole.
    let fraction = fraction.trim_end_matches('0');
    if !fraction.is_empty() {
        let len = u32::try_from(fraction.len()).map_err(|_| too_long())?;
        let scale = 10u64
            .checked_pow(len)
            .ok_or(error("finer than a millisecond"))?;
        let numerator: u64 = fraction.parse().map_err(|_| too_long())?;
        let scaled = numerator
            .checked_mul(unit_ms)
            .ok_or(error("finer than a millisecond"))?;
        if scaled % scale != 0 {
            return Err(error("finer than a millisecond"));
        }
        ms = ms.checked_add(scaled / scale).ok_or_else(too_long)?;
    }
    Ok(Duration::from_millis(ms))
}

/// In seconds, as timelines show it: `15s`, `0.250s`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// In the largest unit that says it exactly, as a person writes a limit:
/// `10m`, `24h`, `90s`, `250ms`. Parses back to the same value.
pub fn format_duration_in_units(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_forms() {
        let ms = |text| parse_duration(text).map(|d| d.as_millis());
        assert_eq!(ms("15s"), Ok(15_000));
        assert_eq!(ms("1.5s"), Ok(1_500));
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("2m"), Ok(120_000));
        assert_eq!(ms("0s"), Ok(0));
        assert_eq!(ms("0ms"), Ok(0));
        assert_eq!(ms("1h"), Ok(3_600_000));
        assert_eq!(ms("0.25m"), Ok(15_000));
        assert_eq!(ms("1.100s"), Ok(1_100));
        assert_eq!(ms("0.001s"), Ok(1));
        assert_eq!(ms("01s"), Ok(1_000));
    }

    #[test]
    fn rejects_everything_else_with_a_reason() {
        for bad in [
            "", "s", "15", "15 s", " 15s", "15s ", "15S", "15sec", "1.s", ".5s", "-1s", "1e3ms",
            "1..5s", "1.5.0s", "1_000ms", "∞s", "1.5ms", "0.0001s",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert_eq!(err.text, bad);
            assert!(
                err.to_string()
                    .starts_with(&format!("invalid duration `{bad}`: "))
            );
        }
        assert_eq!(
            parse_duration("1.0005s").map_err(|e| e.reason),
            Err("finer than a millisecond")
        );
    }

    #[test]
    fn limits_are_written_in_their_largest_exact_unit() {
        for (ms, text) in [
            (600_000, "10m"),
            (86_400_000, "24h"),
            (90_000, "90s"),
            (250, "250ms"),
            (0, "0ms"),
        ] {
            let d = Duration::from_millis(ms);
            assert_eq!(format_duration_in_units(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }

    #[test]
    fn huge_values_are_errors_not_panics() {
        assert!(parse_duration("99999999999999999999999s").is_err());
        assert!(parse_duration("18446744073709551615h").is_err());
        assert!(parse_duration(&format!("1.{}s", "1".repeat(40))).is_err());
        assert!(parse_duration(&format!("1.{}s", "0".repeat(40))).is_ok());
    }
}
