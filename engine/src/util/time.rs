//! Time helpers: the store keeps `i64` microseconds since the epoch (UTC).

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};

/// Now, truncated to microseconds (the store's resolution).
pub fn now() -> DateTime<Utc> {
    from_micros(Utc::now().timestamp_micros())
}

pub(crate) fn to_micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

pub(crate) fn from_micros(us: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(us)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Parses RFC 3339 (`2026-01-25T12:00:00Z`, any offset) or a naive ISO
/// timestamp without zone (`2026-01-25T12:00:00.123`, Sekha's format), which is
/// read as UTC.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(Utc.from_utc_datetime(&t));
        }
        if fmt == "%Y-%m-%d"
            && let Ok(d) = chrono::NaiveDate::parse_from_str(s, fmt)
        {
            return Some(Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0)?));
        }
    }
    None
}

/// Serde adapter for an optional timestamp in either accepted form.
pub(crate) mod lenient_opt {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        match s {
            None => Ok(None),
            Some(s) => super::parse_timestamp(&s).map(Some).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid timestamp {s:?}: expected RFC 3339 like 2026-01-25T12:00:00Z"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms() {
        let a = parse_timestamp("2026-01-25T12:00:00Z").unwrap();
        let b = parse_timestamp("2026-01-25T12:00:00").unwrap();
        let c = parse_timestamp("2026-01-25T14:00:00+02:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(parse_timestamp("yesterday").is_none());
        assert_eq!(from_micros(to_micros(a)), a);
    }
}
