//! Temporal constraints from query text, without a model (SPEC.md §14.4).
//!
//! Memorg's scorer has a temporal factor and a TEMPORAL match type but its
//! query processor never sets `temporal_constraints`, so neither ever
//! applies. [`parse_temporal`] finds the first time expression in a query
//! and turns it into an inclusive UTC range relative to a reference time:
//!
//! | expression | range |
//! |---|---|
//! | `today`, `yesterday` | that UTC day |
//! | `this week` / `month` / `year` | start of the calendar unit → now |
//! | `last week` / `month` / `year` | the previous calendar unit (weeks start Monday) |
//! | `past N days`, `last 3 weeks`, `past month` | now − N units → now |
//! | `N days ago`, `two weeks ago`, `a month ago` | the calendar unit containing now − N units |
//! | `2024-03-05`, `2024-03` | that day, that month |
//! | `March`, `in March 2024`, `March 5`, `5 March 2024`, `March 5, 2024` | that month or day; without a year, the latest one not after now |
//! | `in 2023`, `during 2023` (a year after a preposition) | that year |
//!
//! `since`/`after` before an expression extend it to now (from its
//! start, or its end for `after`); `before`/`until` turn it into
//! everything up to its start (from the Unix epoch). `may` counts as a
//! month only next to a day, a year, or `in`/`since`/`during`/`of`.

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::util::dates::MONTHS;

/// An inclusive time range found in a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeRange {
    /// First instant in the range.
    pub start: DateTime<Utc>,
    /// Last instant in the range (inclusive).
    pub end: DateTime<Utc>,
    /// The words of the query it came from.
    pub expression: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

/// The first time expression in `query`, as a range relative to `now`.
/// `None` when the query has none.
pub fn parse_temporal(query: &str, now: DateTime<Utc>) -> Option<TimeRange> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .map(|w| w.trim_matches('-'))
        .filter(|w| !w.is_empty())
        .collect();
    for i in 0..words.len() {
        if let Some((start, end, len)) = at(&words, i, now) {
            let prev = i.checked_sub(1).map(|p| words[p]);
            let (start, end, from) = match prev {
                Some("since") => (start, now.max(end), i - 1),
                Some("after") => (end, now.max(end), i - 1),
                Some("before" | "until" | "till") => (epoch(), start, i - 1),
                _ => (start, end, i),
            };
            return Some(TimeRange {
                start,
                end,
                expression: words[from..i + len].join(" "),
            });
        }
    }
    None
}

/// A range starting at word `i`, with how many words it used.
fn at(w: &[&str], i: usize, now: DateTime<Utc>) -> Option<(DateTime<Utc>, DateTime<Utc>, usize)> {
    let today = now.date_naive();
    let word = w[i];
    let next = |k: usize| w.get(i + k).copied();
    match word {
        "today" | "tonight" => return Some((day_start(today), day_end(today), 1)),
        "yesterday" => {
            let d = today.checked_sub_days(Days::new(1))?;
            return Some((day_start(d), day_end(d), 1));
        }
        "this" => {
            let unit = unit(next(1)?)?;
            let (start, _) = calendar(today, unit)?;
            return Some((day_start(start), now, 2));
        }
        "last" | "past" | "previous" => {
            if let Some(unit) = next(1).and_then(unit) {
                if word == "past" || unit == Unit::Day {
                    // "past week" / "last day": a rolling window.
                    return Some((back(now, unit, 1)?, now, 2));
                }
                let (start, _) = calendar(today, unit)?;
                let prev = step_back(start, unit, 1)?;
                let (s, e) = calendar(prev, unit)?;
                return Some((day_start(s), day_end(e), 2));
            }
            let n = number(next(1)?)?;
            let unit = unit(next(2)?)?;
            return Some((back(now, unit, n)?, now, 3));
        }
        _ => {}
    }
    // N units ago.
    if let Some(n) = number(word)
        && let Some(unit) = next(1).and_then(unit)
        && next(2) == Some("ago")
    {
        let then = back(now, unit, n)?;
        let (s, e) = calendar(then.date_naive(), unit)?;
        return Some((day_start(s), day_end(e), 3));
    }
    // ISO dates.
    if word.len() >= 7 && word.as_bytes().get(4) == Some(&b'-') {
        if let Ok(d) = NaiveDate::parse_from_str(word, "%Y-%m-%d") {
            return Some((day_start(d), day_end(d), 1));
        }
        if let Ok(d) = NaiveDate::parse_from_str(&format!("{word}-01"), "%Y-%m-%d") {
            let (s, e) = calendar(d, Unit::Month)?;
            return Some((day_start(s), day_end(e), 1));
        }
    }
    // "5 March [2024]".
    if let Some(day) = day_number(word)
        && let Some(m) = next(1).and_then(month)
    {
        let year = next(2).and_then(year);
        let d = resolve_day(today, m, day, year)?;
        return Some((day_start(d), day_end(d), 2 + usize::from(year.is_some())));
    }
    // "March", "March 5", "March 2024", "March 5, 2024".
    if let Some(m) = month(word) {
        let prev = i.checked_sub(1).map(|p| w[p]);
        let day = next(1).and_then(day_number);
        let year_after_day = day.and_then(|_| next(2).and_then(year));
        let year_direct = next(1).and_then(year);
        if m == 5
            && day.is_none()
            && year_direct.is_none()
            && !matches!(
                prev,
                Some("in" | "since" | "during" | "of" | "until" | "before")
            )
        {
            return None;
        }
        if let Some(day) = day {
            let d = resolve_day(today, m, day, year_after_day)?;
            return Some((
                day_start(d),
                day_end(d),
                2 + usize::from(year_after_day.is_some()),
            ));
        }
        let y = year_direct.unwrap_or_else(|| {
            if m > today.month() {
                today.year() - 1
            } else {
                today.year()
            }
        });
        let first = NaiveDate::from_ymd_opt(y, m, 1)?;
        let (s, e) = calendar(first, Unit::Month)?;
        return Some((
            day_start(s),
            day_end(e),
            1 + usize::from(year_direct.is_some()),
        ));
    }
    // "in 2023", "since 2023": a year after a preposition.
    if let Some(y) = year(word)
        && i.checked_sub(1).is_some_and(|p| {
            matches!(
                w[p],
                "in" | "during" | "since" | "before" | "after" | "until" | "of"
            )
        })
    {
        let first = NaiveDate::from_ymd_opt(y, 1, 1)?;
        let (s, e) = calendar(first, Unit::Year)?;
        return Some((day_start(s), day_end(e), 1));
    }
    None
}

fn unit(w: &str) -> Option<Unit> {
    match w {
        "day" | "days" => Some(Unit::Day),
        "week" | "weeks" => Some(Unit::Week),
        "month" | "months" => Some(Unit::Month),
        "year" | "years" => Some(Unit::Year),
        _ => None,
    }
}

fn number(w: &str) -> Option<u32> {
    let n = match w {
        "a" | "an" | "one" => 1,
        "two" | "couple" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => w.parse::<u32>().ok().filter(|n| (1..=10_000).contains(n))?,
    };
    Some(n)
}

fn month(w: &str) -> Option<u32> {
    let pos = MONTHS
        .iter()
        .position(|m| *m == w || (w.len() == 3 && m.starts_with(w) && w != "mar" && w != "may"))
        .or_else(|| (w == "mar").then_some(2))?;
    u32::try_from(pos + 1).ok()
}

fn day_number(w: &str) -> Option<u32> {
    let digits = w
        .strip_suffix("st")
        .or_else(|| w.strip_suffix("nd"))
        .or_else(|| w.strip_suffix("rd"))
        .or_else(|| w.strip_suffix("th"))
        .unwrap_or(w);
    if digits.len() > 2 {
        return None;
    }
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year(w: &str) -> Option<i32> {
    if w.len() != 4 {
        return None;
    }
    w.parse::<i32>().ok().filter(|y| (1970..=2200).contains(y))
}

/// The day `m`/`day` of `year`, or of the latest year in which it is not
/// after `today`.
fn resolve_day(today: NaiveDate, m: u32, day: u32, year: Option<i32>) -> Option<NaiveDate> {
    if let Some(y) = year {
        return NaiveDate::from_ymd_opt(y, m, day);
    }
    let this = NaiveDate::from_ymd_opt(today.year(), m, day);
    match this {
        Some(d) if d <= today => Some(d),
        _ => NaiveDate::from_ymd_opt(today.year() - 1, m, day),
    }
}

/// First and last day of the calendar unit containing `d`.
fn calendar(d: NaiveDate, unit: Unit) -> Option<(NaiveDate, NaiveDate)> {
    match unit {
        Unit::Day => Some((d, d)),
        Unit::Week => {
            let start =
                d.checked_sub_days(Days::new(u64::from(d.weekday().num_days_from_monday())))?;
            Some((start, start.checked_add_days(Days::new(6))?))
        }
        Unit::Month => {
            let start = NaiveDate::from_ymd_opt(d.year(), d.month(), 1)?;
            let end = start.checked_add_months(Months::new(1))?.pred_opt()?;
            Some((start, end))
        }
        Unit::Year => Some((
            NaiveDate::from_ymd_opt(d.year(), 1, 1)?,
            NaiveDate::from_ymd_opt(d.year(), 12, 31)?,
        )),
    }
}

fn step_back(d: NaiveDate, unit: Unit, n: u32) -> Option<NaiveDate> {
    match unit {
        Unit::Day => d.checked_sub_days(Days::new(u64::from(n))),
        Unit::Week => d.checked_sub_days(Days::new(7 * u64::from(n))),
        Unit::Month => d.checked_sub_months(Months::new(n)),
        Unit::Year => d.checked_sub_months(Months::new(n.checked_mul(12)?)),
    }
}

/// `now` less `n` units; `None` before the Unix epoch.
fn back(now: DateTime<Utc>, unit: Unit, n: u32) -> Option<DateTime<Utc>> {
    let t = match unit {
        Unit::Day => now.checked_sub_days(Days::new(u64::from(n))),
        Unit::Week => now.checked_sub_days(Days::new(7 * u64::from(n))),
        Unit::Month => now.checked_sub_months(Months::new(n)),
        Unit::Year => now.checked_sub_months(Months::new(n.checked_mul(12)?)),
    }?;
    (t >= epoch()).then_some(t)
}

fn day_start(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_time(chrono::NaiveTime::MIN))
}

fn day_end(d: NaiveDate) -> DateTime<Utc> {
    day_start(d) + chrono::Duration::days(1) - chrono::Duration::microseconds(1)
}

fn epoch() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2026-03-18 15:30 UTC.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 18, 15, 30, 0).unwrap()
    }

    fn ymd(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
    }

    fn end_of(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        ymd(y, m, d) + chrono::Duration::days(1) - chrono::Duration::microseconds(1)
    }

    fn range(q: &str) -> (DateTime<Utc>, DateTime<Utc>, String) {
        let r = parse_temporal(q, now()).unwrap_or_else(|| panic!("no range in {q:?}"));
        (r.start, r.end, r.expression)
    }

    #[test]
    fn days() {
        assert_eq!(
            range("what did we say today"),
            (ymd(2026, 3, 18), end_of(2026, 3, 18), "today".into())
        );
        assert_eq!(
            range("Yesterday's plan?"),
            (ymd(2026, 3, 17), end_of(2026, 3, 17), "yesterday".into())
        );
        assert_eq!(
            range("two days ago"),
            (ymd(2026, 3, 16), end_of(2026, 3, 16), "two days ago".into())
        );
        assert_eq!(range("3 days ago").0, ymd(2026, 3, 15));
        assert_eq!(range("a day ago").0, ymd(2026, 3, 17));
    }

    #[test]
    fn weeks_months_years() {
        // Calendar weeks start on Monday: this week began Monday 16 March.
        assert_eq!(range("this week").0, ymd(2026, 3, 16));
        assert_eq!(range("this week").1, now());
        assert_eq!(
            range("notes from last week"),
            (ymd(2026, 3, 9), end_of(2026, 3, 15), "last week".into())
        );
        assert_eq!(range("past week").0, now() - chrono::Duration::days(7));
        assert_eq!(
            range("past 3 days"),
            (
                now() - chrono::Duration::days(3),
                now(),
                "past 3 days".into()
            )
        );
        assert_eq!(range("last 2 weeks").0, now() - chrono::Duration::days(14));
        assert_eq!(
            range("last month"),
            (ymd(2026, 2, 1), end_of(2026, 2, 28), "last month".into())
        );
        assert_eq!(range("this month").0, ymd(2026, 3, 1));
        assert_eq!(
            range("last year"),
            (ymd(2025, 1, 1), end_of(2025, 12, 31), "last year".into())
        );
        assert_eq!(
            range("two weeks ago"),
            (ymd(2026, 3, 2), end_of(2026, 3, 8), "two weeks ago".into())
        );
        assert_eq!(
            range("a month ago"),
            (ymd(2026, 2, 1), end_of(2026, 2, 28), "a month ago".into())
        );
        assert_eq!(
            range("what happened in 2024"),
            (ymd(2024, 1, 1), end_of(2024, 12, 31), "2024".into())
        );
        assert_eq!(
            range("since 2025"),
            (ymd(2025, 1, 1), now(), "since 2025".into())
        );
    }

    #[test]
    fn months_and_dates() {
        // A month not after now is this year's; a later one last year's.
        assert_eq!(
            range("in March"),
            (ymd(2026, 3, 1), end_of(2026, 3, 31), "march".into())
        );
        assert_eq!(range("back in December").0, ymd(2025, 12, 1));
        assert_eq!(
            range("Feb 2024"),
            (ymd(2024, 2, 1), end_of(2024, 2, 29), "feb 2024".into())
        );
        assert_eq!(
            range("on March 5"),
            (ymd(2026, 3, 5), end_of(2026, 3, 5), "march 5".into())
        );
        assert_eq!(range("on March 20").0, ymd(2025, 3, 20));
        assert_eq!(range("March 5, 2024").0, ymd(2024, 3, 5));
        assert_eq!(range("5th March 2024").0, ymd(2024, 3, 5));
        assert_eq!(
            range("the 2024-03-05 meeting"),
            (ymd(2024, 3, 5), end_of(2024, 3, 5), "2024-03-05".into())
        );
        assert_eq!(range("during 2024-02").1, end_of(2024, 2, 29));
        // "may" is a month only with a cue.
        assert!(parse_temporal("may I ask something", now()).is_none());
        assert_eq!(range("in May").0, ymd(2025, 5, 1));
        assert_eq!(range("May 3").0, ymd(2025, 5, 3));
    }

    #[test]
    fn modifiers() {
        assert_eq!(
            range("since March 5"),
            (ymd(2026, 3, 5), now(), "since march 5".into())
        );
        assert_eq!(range("after 2026-03-01").0, end_of(2026, 3, 1));
        assert_eq!(
            range("before 2024-01-01"),
            (
                DateTime::<Utc>::UNIX_EPOCH,
                ymd(2024, 1, 1),
                "before 2024-01-01".into()
            )
        );
        assert_eq!(range("since last week").1, now());
    }

    #[test]
    fn no_expression_and_bad_dates() {
        for q in [
            "",
            "how do lifetimes work",
            "2024-13-45",
            "February 30",
            "last thing",
            "the 99 days",
            "in 12345",
        ] {
            assert!(parse_temporal(q, now()).is_none(), "{q:?}");
        }
        // Huge counts do not overflow.
        assert!(parse_temporal("9999 years ago", now()).is_none());
        assert!(parse_temporal("past 10000 years", now()).is_none());
        assert_eq!(range("10 years ago").0, ymd(2016, 1, 1));
    }
}
