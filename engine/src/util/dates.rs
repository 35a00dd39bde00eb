//! Dates in free text (SPEC.md §18.3, hybrid): the date a message's metadata gives
//! its session (`"1:56 pm on 8 May, 2023"`, `"2023-05-08"`, `"May 8,
//! 2023"`), and the period a question names (`"in May 2023"`, `"in 2023"`,
//! `"on 8 May 2023"`, `"last month"`, `"the week before"` is not one: it
//! names no anchor). Pure functions: text in, dates out, never a panic.

use chrono::{Datelike, Duration, NaiveDate};

/// Month names, January first, lowercase (also Memorg's temporal parser).
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month numbered 1..=12 named by `w` (full name or three-letter
/// abbreviation, any case; `may` only in full, as it is also a word).
fn month(w: &str) -> Option<u32> {
    let w = w.trim_end_matches('.').to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == w || (w.len() == 3 && w != "may" && m.starts_with(&w)))
        .map(|i| i as u32 + 1)
}

fn year(w: &str) -> Option<i32> {
    let y: i32 = w.parse().ok()?;
    (w.len() == 4 && (1900..=2200).contains(&y)).then_some(y)
}

fn day(w: &str) -> Option<u32> {
    let w = w
        .trim_end_matches("st")
        .trim_end_matches("nd")
        .trim_end_matches("rd")
        .trim_end_matches("th");
    let d: u32 = w.parse().ok()?;
    (1..=31).contains(&d).then_some(d)
}

/// The date of a message for questions that name a period: the first of
/// its metadata's `session_date`, `date`, `datetime`, `session_time`,
/// `time` or `timestamp` strings that reads as a date (the client's own
/// timeline: a history imported today keeps the dates its sessions had),
/// else the day of its timestamp (UTC).
pub(crate) fn event_date(
    metadata: &serde_json::Value,
    timestamp: chrono::DateTime<chrono::Utc>,
) -> NaiveDate {
    const KEYS: [&str; 6] = [
        "session_date",
        "date",
        "datetime",
        "session_time",
        "time",
        "timestamp",
    ];
    KEYS.iter()
        .filter_map(|k| metadata.get(*k).and_then(|v| v.as_str()))
        .find_map(parse_date)
        .unwrap_or_else(|| timestamp.date_naive())
}

/// The calendar date in `s`, if it holds a recognisable one: ISO
/// `YYYY-MM-DD` (also the start of an RFC 3339 time), `D Month YYYY`,
/// `Month D YYYY` (any punctuation and a time of day around them).
pub(crate) fn parse_date(s: &str) -> Option<NaiveDate> {
    let t = s.trim();
    if t.len() >= 10
        && let Some(iso) = t.get(..10)
        && let Ok(d) = NaiveDate::parse_from_str(iso, "%Y-%m-%d")
    {
        return Some(d);
    }
    let w: Vec<String> = spans(t).into_iter().map(|(w, _, _)| w).collect();
    for i in 0..w.len() {
        let Some(m) = month(&w[i]) else { continue };
        // D Month YYYY
        if i >= 1
            && let (Some(d), Some(y)) = (day(&w[i - 1]), w.get(i + 1).and_then(|x| year(x)))
        {
            return NaiveDate::from_ymd_opt(y, m, d);
        }
        // Month D YYYY
        if let (Some(d), Some(y)) = (
            w.get(i + 1).and_then(|x| day(x)),
            w.get(i + 2).and_then(|x| year(x)),
        ) {
            return NaiveDate::from_ymd_opt(y, m, d);
        }
    }
    None
}

/// A period a question names: `[start, end)` in days, and the byte range
/// of the words that named it (removed from the text that is searched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Period {
    pub(crate) start: NaiveDate,
    pub(crate) end: NaiveDate,
    pub(crate) span: (usize, usize),
}

fn year_period(y: i32) -> Option<(NaiveDate, NaiveDate)> {
    Some((
        NaiveDate::from_ymd_opt(y, 1, 1)?,
        NaiveDate::from_ymd_opt(y + 1, 1, 1)?,
    ))
}

fn month_period(y: i32, m: u32) -> Option<(NaiveDate, NaiveDate)> {
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    let end = if m == 12 {
        NaiveDate::from_ymd_opt(y + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(y, m + 1, 1)?
    };
    Some((start, end))
}

/// Words of `s` with their byte ranges.
fn spans(s: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                out.push((s[b..i].to_ascii_lowercase(), b, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((s[b..].to_ascii_lowercase(), b, s.len()));
    }
    out
}

/// The first period `query` names, read against `anchor` (the latest date
/// of the conversations searched) for the relative forms: `in|on|during
/// D Month YYYY` / `Month D, YYYY` (that day), `in|during Month YYYY` (that
/// month), `in|during YYYY` (that year), `in|during Month` (that month in
/// the anchor's year, or the year before when it would lie after the
/// anchor), `last|this month|year|week`, `yesterday`. The leading
/// preposition, when present, belongs to the span.
pub(crate) fn query_period(query: &str, anchor: Option<NaiveDate>) -> Option<Period> {
    let w = spans(query);
    let prep = |i: usize| {
        i >= 1
            && matches!(
                w[i - 1].0.as_str(),
                "in" | "on" | "during" | "around" | "from"
            )
    };
    let start_of = |i: usize| if prep(i) { w[i - 1].1 } else { w[i].1 };
    for i in 0..w.len() {
        let word = w[i].0.as_str();
        // D Month YYYY or Month D YYYY: that day.
        let at = |k: usize| w.get(i + k).map(|x| x.0.as_str());
        let day_month = match (day(word), month(word)) {
            (Some(d), _) => at(1).and_then(month).map(|m| (m, d)),
            (None, Some(m)) => at(1).and_then(day).map(|d| (m, d)),
            (None, None) => None,
        };
        if let Some((m, d)) = day_month
            && let Some(y) = at(2).and_then(year)
            && let Some(start) = NaiveDate::from_ymd_opt(y, m, d)
        {
            return Some(Period {
                start,
                end: start.succ_opt()?,
                span: (start_of(i), w[i + 2].2),
            });
        }
        if let Some(m) = month(word) {
            // Month YYYY
            if let Some(y) = w.get(i + 1).and_then(|x| year(&x.0))
                && let Some((start, end)) = month_period(y, m)
            {
                return Some(Period {
                    start,
                    end,
                    span: (start_of(i), w[i + 1].2),
                });
            }
            // in Month (a preposition is required: "may" is also a verb)
            if prep(i)
                && let Some(a) = anchor
            {
                let y = if m > a.month() {
                    a.year() - 1
                } else {
                    a.year()
                };
                if let Some((start, end)) = month_period(y, m) {
                    return Some(Period {
                        start,
                        end,
                        span: (start_of(i), w[i].2),
                    });
                }
            }
        }
        // in YYYY
        if prep(i)
            && let Some(y) = year(word)
            && let Some((start, end)) = year_period(y)
        {
            return Some(Period {
                start,
                end,
                span: (start_of(i), w[i].2),
            });
        }
        let Some(a) = anchor else { continue };
        if word == "yesterday" {
            return Some(Period {
                start: a.checked_sub_signed(Duration::days(1))?,
                end: a,
                span: (w[i].1, w[i].2),
            });
        }
        if matches!(word, "last" | "this")
            && let Some(unit) = w.get(i + 1)
        {
            let this = word == "this";
            let found = match unit.0.as_str() {
                "week" => {
                    let monday = a.checked_sub_signed(Duration::days(i64::from(
                        a.weekday().num_days_from_monday(),
                    )))?;
                    let start = if this {
                        monday
                    } else {
                        monday.checked_sub_signed(Duration::days(7))?
                    };
                    Some((start, start.checked_add_signed(Duration::days(7))?))
                }
                "month" => {
                    let (y, m) = if this || a.month() > 1 {
                        (a.year(), if this { a.month() } else { a.month() - 1 })
                    } else {
                        (a.year() - 1, 12)
                    };
                    month_period(y, m)
                }
                "year" => year_period(if this { a.year() } else { a.year() - 1 }),
                _ => None,
            };
            if let Some((start, end)) = found {
                return Some(Period {
                    start,
                    end,
                    span: (w[i].1, unit.2),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn a_message_is_dated_by_its_metadata_then_its_timestamp() {
        let ts = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let meta = serde_json::json!({"turn_id": "D1:3", "session_date": "1:56 pm on 8 May, 2023"});
        assert_eq!(event_date(&meta, ts), d(2023, 5, 8));
        let meta = serde_json::json!({"date": "sometime", "time": "2024-02-03"});
        assert_eq!(event_date(&meta, ts), d(2024, 2, 3));
        assert_eq!(event_date(&serde_json::json!({}), ts), d(2026, 12, 1));
        // The relative forms never overflow at the ends of the calendar.
        assert!(query_period("last week", Some(NaiveDate::MIN)).is_none());
    }

    #[test]
    fn session_dates_in_the_usual_shapes() {
        assert_eq!(parse_date("1:56 pm on 8 May, 2023"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("2023-05-08T10:00:00Z"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("May 8th, 2023"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("Sat, 3 Feb 2024 10:00"), Some(d(2024, 2, 3)));
        assert_eq!(parse_date("soon"), None);
        assert_eq!(parse_date("31 February 2023"), None);
        assert_eq!(parse_date(""), None);
    }

    #[test]
    fn periods_a_question_names() {
        let q = "What did Ana say about the trip in May 2018?";
        let p = query_period(q, None).unwrap();
        assert_eq!((p.start, p.end), (d(2018, 5, 1), d(2018, 6, 1)));
        assert_eq!(&q[p.span.0..p.span.1], "in May 2018");
        let p = query_period("what happened on 8 May 2023", None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 8), d(2023, 5, 9)));
        let p = query_period("plans during 2021?", None).unwrap();
        assert_eq!((p.start, p.end), (d(2021, 1, 1), d(2022, 1, 1)));
        let p = query_period("December 31, 2020 party", None).unwrap();
        assert_eq!((p.start, p.end), (d(2020, 12, 31), d(2021, 1, 1)));
        // Relative forms need the anchor.
        let a = Some(d(2023, 3, 15)); // a Wednesday
        assert!(query_period("what about last month", None).is_none());
        let p = query_period("what about last month", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 2, 1), d(2023, 3, 1)));
        let p = query_period("in May", a).unwrap();
        assert_eq!((p.start, p.end), (d(2022, 5, 1), d(2022, 6, 1)));
        let p = query_period("this week", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 13), d(2023, 3, 20)));
        let p = query_period("last year", a).unwrap();
        assert_eq!(p.start, d(2022, 1, 1));
        assert_eq!(
            query_period("yesterday", a).map(|p| p.start),
            Some(d(2023, 3, 14))
        );
        // "may" the verb, bare numbers and no date at all: none.
        assert!(query_period("you may be right", a).is_none());
        assert!(query_period("I have 2018 reasons", a).is_none());
        assert!(query_period("where do they live", a).is_none());
    }
}
