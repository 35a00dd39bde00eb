//! Dates in free text (SPEC.md §18.3, hybrid): the date a message's metadata gives
//! its session (`"1:56 pm on 8 May, 2023"`, `"2023-05-08"`, `"May 8,
//! 2023"`), and the period a question names (`"in May 2023"`, `"in 2023"`,
//! `"on 8 May 2023"`, `"last month"`, `"last Tuesday"`, `"3 weeks ago"`,
//! `"the week before 8 May 2023"`; `"the week before her birthday"` is not
//! one: it names no date). Pure functions: text in, dates out, never a
//! panic.

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

/// The weekday named by `w` in full ("tuesday"; the abbreviations are
/// also words: "sat", "sun", "wed").
fn weekday(w: &str) -> Option<chrono::Weekday> {
    use chrono::Weekday::*;
    Some(match w {
        "monday" => Mon,
        "tuesday" => Tue,
        "wednesday" => Wed,
        "thursday" => Thu,
        "friday" => Fri,
        "saturday" => Sat,
        "sunday" => Sun,
        _ => return None,
    })
}

/// A small count in words or digits ("a", "one" ... "twelve", "1" ... "99").
fn count(w: &str) -> Option<u32> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    if matches!(w, "a" | "an") {
        return Some(1);
    }
    if let Some(i) = WORDS.iter().position(|x| *x == w) {
        return Some(i as u32 + 1);
    }
    let n: u32 = w.parse().ok()?;
    (1..100).contains(&n).then_some(n)
}

/// The Monday of `a`'s week.
fn monday_of(a: NaiveDate) -> Option<NaiveDate> {
    a.checked_sub_signed(Duration::days(i64::from(
        a.weekday().num_days_from_monday(),
    )))
}

/// (year, month) `n` months before `a`'s month.
fn months_before(a: NaiveDate, n: u32) -> (i32, u32) {
    let total = a.year() * 12 + a.month0() as i32 - n as i32;
    (total.div_euclid(12), total.rem_euclid(12) as u32 + 1)
}

/// `[start, end)` from `hi` to `lo` units before the anchor's (day, week,
/// month or year), `lo <= hi`: "3 days ago", "a few weeks ago".
fn units_ago(a: NaiveDate, unit: &str, lo: u32, hi: u32) -> Option<(NaiveDate, NaiveDate)> {
    let days = |n: u32| Duration::days(i64::from(n));
    match unit.trim_end_matches('s') {
        "day" => Some((
            a.checked_sub_signed(days(hi))?,
            a.checked_sub_signed(days(lo))?.succ_opt()?,
        )),
        "week" => {
            let monday = monday_of(a)?;
            Some((
                monday.checked_sub_signed(days(7 * hi))?,
                monday.checked_sub_signed(days(7 * (lo - 1)))?,
            ))
        }
        "month" => {
            let (y0, m0) = months_before(a, hi);
            let (y1, m1) = months_before(a, lo);
            Some((month_period(y0, m0)?.0, month_period(y1, m1)?.1))
        }
        "year" => Some((
            year_period(a.year() - hi as i32)?.0,
            year_period(a.year() - lo as i32)?.1,
        )),
        _ => None,
    }
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

/// Whether the metadata key `key` names a date or a time: one of its words
/// (split at `_`, `-`, other non-alphanumerics and lower-to-upper case
/// changes) is `date`, `time`, `datetime` or `timestamp` (`date_time`,
/// `session_1_date_time`, `sessionDate`). `updated_at`, `imported_at` and
/// `created_at` name when a record was written, which the message's own
/// timestamp already says, and are not read; nor is `updated`, which only
/// holds the letters of `date`.
fn key_names_a_date(key: &str) -> bool {
    let is_date = |w: &str| matches!(w, "date" | "time" | "datetime" | "timestamp");
    let mut word = String::new();
    let mut lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() || (lower && c.is_uppercase()) {
            if is_date(&word) {
                return true;
            }
            word.clear();
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        lower = c.is_lowercase();
    }
    is_date(&word)
}

/// The date a metadata object gives, for questions that name a period: the
/// first of its `session_date`, `date`, `datetime`, `session_time`, `time`
/// or `timestamp` strings that reads as a date, else the first other
/// top-level string whose key names a date or a time
/// ([`key_names_a_date`]; in key order) that reads as one. A message's
/// date is its own metadata's, else its conversation's, else its
/// timestamp's day (`query/period.rs`): the client's own timeline, so a
/// history imported today keeps the dates its sessions had.
pub(crate) fn metadata_date(metadata: &serde_json::Value) -> Option<NaiveDate> {
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
        .or_else(|| {
            metadata
                .as_object()?
                .iter()
                .filter(|(k, _)| !KEYS.contains(&k.as_str()) && key_names_a_date(k))
                .filter_map(|(_, v)| v.as_str())
                .find_map(parse_date)
        })
}

/// The calendar date in `s`, if it holds a recognisable one: ISO
/// `YYYY-MM-DD` (also the start of an RFC 3339 time; `/` or `.` may
/// separate the numbers, and the date may stand anywhere in `s`),
/// `D Month YYYY`, `Month D YYYY` (any punctuation and a time of day
/// around them). Numeric dates with the year last (`5/8/2023`) are left
/// unread: the day and the month cannot be told apart.
pub(crate) fn parse_date(s: &str) -> Option<NaiveDate> {
    let t = s.trim();
    if t.len() >= 10
        && let Some(iso) = t.get(..10)
        && let Ok(d) = NaiveDate::parse_from_str(iso, "%Y-%m-%d")
    {
        return Some(d);
    }
    let words = spans(t);
    let w: Vec<&str> = words.iter().map(|(w, _, _)| w.as_str()).collect();
    for i in 0..w.len() {
        // YYYY-MM-DD, YYYY/MM/DD, YYYY.MM.DD anywhere
        if let Some(y) = year(w[i])
            && let (Some(m), Some(d)) = (w.get(i + 1), w.get(i + 2))
            && [(i, i + 1), (i + 1, i + 2)].iter().all(|&(a, b)| {
                let sep = &t[words[a].2..words[b].1];
                sep == "-" || sep == "/" || sep == "."
            })
            && m.len() <= 2
            && let (Ok(m), Some(d)) = (m.parse::<u32>(), leading_day(d))
        {
            return NaiveDate::from_ymd_opt(y, m, d);
        }
        let Some(m) = month(w[i]) else { continue };
        // D Month YYYY
        if i >= 1
            && let (Some(d), Some(y)) = (day(w[i - 1]), w.get(i + 1).and_then(|x| year(x)))
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

/// The day of month a numeric date's last part opens with (`08`, or `08`
/// of `08t10`, an ISO time run on).
fn leading_day(w: &str) -> Option<u32> {
    let digits = w.len() - w.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (1..=2)
        .contains(&digits)
        .then(|| day(&w[..digits]))
        .flatten()
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
    months_from(y, m, 1)
}

/// `[start, end)` of the `n` months from month `m` of year `y` on: one
/// month, a season (3), a part of a year (4).
fn months_from(y: i32, m: u32, n: u32) -> Option<(NaiveDate, NaiveDate)> {
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    Some((start, start.checked_add_months(chrono::Months::new(n))?))
}

/// The year of the last month `m` up to the anchor `a`: its own year, or
/// the year before when month `m` of it lies after the anchor's month.
fn year_of_month_up_to(a: NaiveDate, m: u32) -> i32 {
    if m > a.month() {
        a.year() - 1
    } else {
        a.year()
    }
}

/// The days `[first, last]` of a month (1-based; `last` past the month's
/// end means its last day) that a part of it names: `early` 1-10, `mid`
/// 11-20, `late` 21 to the end; `beginning` and `start` as early, `end`
/// as late; the first to fourth week 1-7 to 22-28, the last week its last
/// seven days (`None` for these: [`month_part_period`] reads them).
fn month_part(w: &str) -> Option<(u32, u32)> {
    Some(match w {
        "early" | "beginning" | "start" => (1, 10),
        "mid" | "middle" => (11, 20),
        "late" | "end" => (21, 31),
        _ => return None,
    })
}

/// `[start, end)` of the part of month `m` of year `y`: days `first` to
/// `last` (clamped to the month), or with `None` its last seven.
fn month_part_period(y: i32, m: u32, days: Option<(u32, u32)>) -> Option<(NaiveDate, NaiveDate)> {
    let (start, end) = month_period(y, m)?;
    match days {
        Some((first, last)) => {
            let from = NaiveDate::from_ymd_opt(y, m, first)?;
            let to = start.checked_add_signed(Duration::days(i64::from(last)))?;
            Some((from, to.min(end)))
        }
        None => Some((end.checked_sub_signed(Duration::days(7))?, end)),
    }
}

/// The part of a year `early`, `mid` and `late` name: January to April,
/// May to August, September to December.
fn year_part(y: i32, w: &str) -> Option<(NaiveDate, NaiveDate)> {
    let first = match w {
        "early" => 1,
        "mid" => 5,
        "late" => 9,
        _ => return None,
    };
    months_from(y, first, 4)
}

/// The first month of the season `w` names, in the northern hemisphere's
/// meteorological seasons: spring March to May, summer June to August,
/// autumn (fall) September to November, winter December to February.
fn season(w: &str) -> Option<u32> {
    Some(match w {
        "spring" => 3,
        "summer" => 6,
        "autumn" | "fall" => 9,
        "winter" => 12,
        _ => return None,
    })
}

/// `[start, end)` of the season starting in month `m` of year `y`.
fn season_period(y: i32, m: u32) -> Option<(NaiveDate, NaiveDate)> {
    months_from(y, m, 3)
}

/// The season starting in month `m` that a relative form means, against
/// the anchor `a`: `last` the latest one over before the anchor; `this` the
/// one the anchor is in, else the nearest (the summer just past, asked in
/// October; the coming one, asked in March); otherwise (`in the summer`)
/// the latest one begun by the anchor.
fn relative_season(a: NaiveDate, m: u32, form: &str) -> Option<(NaiveDate, NaiveDate)> {
    let seasons: Vec<(NaiveDate, NaiveDate)> = (a.year() - 2..=a.year() + 1)
        .filter_map(|y| season_period(y, m))
        .collect();
    match form {
        "last" | "past" => seasons.into_iter().filter(|s| s.1 <= a).max(),
        "this" => seasons.into_iter().min_by_key(|s| {
            if s.0 <= a && a < s.1 {
                0
            } else {
                (s.0 - a).num_days().abs().min((s.1 - a).num_days().abs())
            }
        }),
        _ => seasons.into_iter().filter(|s| s.0 <= a).max(),
    }
}

/// Parts of a day a question may name with a date ("the evening of").
const PARTS_OF_DAY: [&str; 4] = ["morning", "afternoon", "evening", "night"];

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

/// Word `first` of `w` moved back over the words that may stand before
/// it, one step per set in `steps`, in order (an optional "the", then an
/// optional preposition): the first word of a period's span.
fn lead_in(w: &[(String, usize, usize)], mut first: usize, steps: &[&[&str]]) -> usize {
    for words in steps {
        if first >= 1 && words.contains(&w[first - 1].0.as_str()) {
            first -= 1;
        }
    }
    first
}

/// The first period `query` names, read against `anchor` (the latest date of
/// the conversations searched) for the relative forms: `in|on|during D Month
/// YYYY` / `D of Month YYYY` / `Month D, YYYY` (that day), `D Month` / `D of
/// Month` / `Month D` without a year (that day up to the anchor: in its year,
/// or the year before when it would lie after it; `May D` only after a
/// preposition or `the`), `in|during Month YYYY` (that month), `in|during YYYY`
/// (that year), `in|during Month` (that month in the anchor's year, or the year
/// before when it would lie after the anchor), `last|this
/// month|year|week|weekend`, `last Month` (the last such month before the
/// anchor's), `today`, `yesterday`, `the day before yesterday`,
/// `on|last|this|past Weekday` (the last such day before the anchor), `N
/// days|weeks|months|years ago` (N in digits or words; `a few` is 2 to 4, `a
/// couple of` 2), and `the day|week|month before|after D Month YYYY` (with a
/// count, `two weeks before D Month YYYY`: the unit that many away), `the
/// week|weekend of D Month YYYY` (the week, or its Saturday and Sunday, that
/// holds the date); seasons (northern, meteorological: spring from March,
/// summer from June, autumn or fall from September, winter from December):
/// `[in|during|over|around|through] [the] Season [of] YYYY` (winter YYYY: the
/// one its January is in); parts of a month, `early|mid|late Month [YYYY]`,
/// `the beginning|start|middle|end of Month [YYYY]`, `the first|…|fourth|last
/// week of Month [YYYY]` (without a year: the last such month up to the
/// anchor), and of a year, `early|mid|late YYYY`; and against the anchor
/// `last|past Season` (the latest one over), `this Season` (the one the anchor
/// is in, else the nearest), `in|during|over|around|through [the] Season` (the
/// latest one begun). The leading preposition, when present, belongs to the
/// span.
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
        // D Month YYYY, D of Month YYYY or Month D YYYY: that day. `k`:
        // the offset of the day's second word (month or day).
        let at = |k: usize| w.get(i + k).map(|x| x.0.as_str());
        let (day_month, k) = match (day(word), month(word)) {
            (Some(d), _) if at(1) == Some("of") => (at(2).and_then(month).map(|m| (m, d)), 2),
            (Some(d), _) => (at(1).and_then(month).map(|m| (m, d)), 1),
            (None, Some(m)) => (at(1).and_then(day).map(|d| (m, d)), 1),
            (None, None) => (None, 1),
        };
        // With its year: that day. Without (a relative form): that day up
        // to the anchor, in its year or the year before. "May 5" needs a
        // preposition or "the" before it: "may" is also a verb.
        let dated = day_month.and_then(|(m, d)| match at(k + 1).and_then(year) {
            Some(y) => NaiveDate::from_ymd_opt(y, m, d).map(|date| (date, i + k + 1)),
            None => {
                let a = anchor?;
                if word == "may" && !(prep(i) || (i >= 1 && w[i - 1].0 == "the")) {
                    return None;
                }
                let date = match NaiveDate::from_ymd_opt(a.year(), m, d) {
                    Some(this) if this <= a => this,
                    _ => NaiveDate::from_ymd_opt(a.year() - 1, m, d)?,
                };
                Some((date, i + k))
            }
        });
        if let Some((date, last_word)) = dated {
            // "the day|week|month before|after D Month YYYY": that span
            // next to the date (the date itself excluded); with a count,
            // "two weeks before D Month YYYY", the span that many units
            // away (days 14 to 8 before it).
            let n = (i >= 3).then(|| count(&w[i - 3].0)).flatten();
            let around = (i >= 2)
                .then(|| (w[i - 2].0.as_str(), w[i - 1].0.as_str()))
                .and_then(|(unit, side)| {
                    // A plural unit needs its count ("two weeks before").
                    let (unit, plural) = match unit.strip_suffix('s') {
                        Some(one) => (one, true),
                        None => (unit, false),
                    };
                    if plural && n.is_none() {
                        return None;
                    }
                    let per: i64 = match unit {
                        "day" => 1,
                        "week" => 7,
                        "month" => 30,
                        _ => return None,
                    };
                    let n = i64::from(n.unwrap_or(1));
                    let days = |k: i64| Duration::days(per * k);
                    match side {
                        "before" => Some((
                            date.checked_sub_signed(days(n))?,
                            date.checked_sub_signed(days(n - 1))?,
                        )),
                        "after" => Some((
                            date.succ_opt()?.checked_add_signed(days(n - 1))?,
                            date.succ_opt()?.checked_add_signed(days(n))?,
                        )),
                        _ => None,
                    }
                });
            // "the week of D Month YYYY": the Monday-to-Sunday week that
            // holds the date; "the weekend of": its Saturday and Sunday
            // (those after a weekday, the same ones on a weekend day).
            let holding = (i >= 2 && w[i - 1].0 == "of")
                .then(|| w[i - 2].0.as_str())
                .and_then(|unit| {
                    let monday = monday_of(date)?;
                    match unit {
                        "week" => Some((monday, monday.checked_add_signed(Duration::days(7))?)),
                        "weekend" => {
                            let saturday = monday.checked_add_signed(Duration::days(5))?;
                            Some((saturday, saturday.checked_add_signed(Duration::days(2))?))
                        }
                        _ => None,
                    }
                });
            if let Some((start, end)) = holding {
                let first = lead_in(&w, i - 2, &[&["the"], &["in", "on", "during", "over"]]);
                return Some(Period {
                    start,
                    end,
                    span: (w[first].1, w[last_word].2),
                });
            }
            if let Some((start, end)) = around {
                let first = if n.is_some() || (i >= 3 && w[i - 3].0 == "the") {
                    i - 3
                } else {
                    i - 2
                };
                return Some(Period {
                    start,
                    end,
                    span: (w[first].1, w[last_word].2),
                });
            }
            // A time of day naming part of that day belongs to the date,
            // not to the words to match: "on the evening of D Month YYYY",
            // "the D Month YYYY morning chat".
            let part = |j: usize| PARTS_OF_DAY.contains(&w[j].0.as_str());
            let mut first = start_of(i);
            if i >= 2 && w[i - 1].0 == "of" && part(i - 2) {
                first = w[lead_in(&w, i - 2, &[&["the"], &["in", "on", "during"]])].1;
            }
            let last = if w.len() > last_word + 1 && part(last_word + 1) {
                w[last_word + 1].2
            } else {
                w[last_word].2
            };
            return Some(Period {
                start: date,
                end: date.succ_opt()?,
                span: (first, last),
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
                && let Some((start, end)) = month_period(year_of_month_up_to(a, m), m)
            {
                return Some(Period {
                    start,
                    end,
                    span: (start_of(i), w[i].2),
                });
            }
        }
        // Parts of a month or a year: "in early May 2023", "mid-June",
        // "the end of May 2023", "the first week of June 2023", "late
        // 2022"; a month without its year is the last such month up to the
        // anchor, as "in May" is.
        {
            // `days` for the month (None: the last week), `k` the offset of
            // the month's word, `first` the first word of the span.
            let part = match (word, at(1), at(2), at(3)) {
                ("early" | "mid" | "late", ..) => month_part(word).map(|d| (Some(d), 1, i)),
                ("beginning" | "start" | "middle" | "end", Some("of"), ..)
                    if i >= 1 && w[i - 1].0 == "the" =>
                {
                    month_part(word).map(|d| (Some(d), 2, i - 1))
                }
                (nth, Some("week"), Some("of"), _) if i >= 1 && w[i - 1].0 == "the" => {
                    let days = match nth {
                        "first" => Some(Some((1, 7))),
                        "second" => Some(Some((8, 14))),
                        "third" => Some(Some((15, 21))),
                        "fourth" => Some(Some((22, 28))),
                        "last" => Some(None),
                        _ => None,
                    };
                    days.map(|d| (d, 3, i - 1))
                }
                _ => None,
            };
            if let Some((days, k, first)) = part {
                let first = lead_in(&w, first, &[&["in", "during", "around", "by"]]);
                if let Some(m) = at(k).and_then(month) {
                    let found = match at(k + 1).and_then(year) {
                        Some(y) => month_part_period(y, m, days).map(|p| (p, i + k + 1)),
                        None => anchor.and_then(|a| {
                            month_part_period(year_of_month_up_to(a, m), m, days)
                                .map(|p| (p, i + k))
                        }),
                    };
                    if let Some(((start, end), last)) = found {
                        return Some(Period {
                            start,
                            end,
                            span: (w[first].1, w[last].2),
                        });
                    }
                } else if k == 1
                    && let Some(y) = at(1).and_then(year)
                    && let Some((start, end)) = year_part(y, word)
                {
                    return Some(Period {
                        start,
                        end,
                        span: (w[first].1, w[i + 1].2),
                    });
                }
            }
        }
        // Seasons: "in the summer of 2018", "winter 2019" (the winter its
        // January is in), and, against the anchor, "last summer", "this
        // spring", "in the fall" ("fall" alone is a verb, and "the summer
        // before college" names no date: without a year, a season needs a
        // preposition, "last", "past" or "this").
        if let Some(m) = season(word) {
            let the = lead_in(&w, i, &[&["the"]]);
            let first = lead_in(&w, the, &[&["in", "during", "over", "around", "through"]]);
            let led = first < the;
            let year_at = if at(1) == Some("of") { i + 2 } else { i + 1 };
            if let Some(y) = w.get(year_at).and_then(|x| year(&x.0))
                && let Some((start, end)) = season_period(if m == 12 { y - 1 } else { y }, m)
            {
                return Some(Period {
                    start,
                    end,
                    span: (w[first].1, w[year_at].2),
                });
            }
            let form = (i >= 1)
                .then(|| w[i - 1].0.as_str())
                .filter(|f| matches!(*f, "last" | "past" | "this"));
            if let Some(a) = anchor
                && (form.is_some() || led)
                && let Some((start, end)) = relative_season(a, m, form.unwrap_or("in"))
            {
                let first = if form.is_some() { i - 1 } else { first };
                return Some(Period {
                    start,
                    end,
                    span: (w[first].1, w[i].2),
                });
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
        let day_span = |start: NaiveDate, first: usize, last: usize| {
            Some(Period {
                start,
                end: start.succ_opt()?,
                span: (w[first].1, w[last].2),
            })
        };
        if word == "today" {
            return day_span(a, i, i);
        }
        // "the day before yesterday"
        if word == "day" && at(1) == Some("before") && at(2) == Some("yesterday") {
            let first = lead_in(&w, i, &[&["the"]]);
            return day_span(a.checked_sub_signed(Duration::days(2))?, first, i + 2);
        }
        // "on|last|this|past Tuesday": the last such day before the anchor.
        if let Some(wd) = weekday(word)
            && i >= 1
            && matches!(w[i - 1].0.as_str(), "on" | "last" | "this" | "past")
        {
            let back = (7 + a.weekday().num_days_from_monday() - wd.num_days_from_monday()) % 7;
            let back = if back == 0 { 7 } else { back };
            return day_span(
                a.checked_sub_signed(Duration::days(i64::from(back)))?,
                i - 1,
                i,
            );
        }
        // "N days|weeks|months|years ago", "a few weeks ago" (2 to 4), "a
        // couple of days ago" (2).
        let (n, unit_at) = match word {
            "few" => (Some((2, 4)), i + 1),
            "couple" if at(1) == Some("of") => (Some((2, 2)), i + 2),
            _ => (count(word).map(|n| (n, n)), i + 1),
        };
        if let Some((lo, hi)) = n
            && let Some(unit) = w.get(unit_at)
            && w.get(unit_at + 1).is_some_and(|x| x.0 == "ago")
            && let Some((start, end)) = units_ago(a, &unit.0, lo, hi)
        {
            let first = if matches!(word, "few" | "couple") && i >= 1 && w[i - 1].0 == "a" {
                i - 1
            } else {
                i
            };
            return Some(Period {
                start,
                end,
                span: (w[first].1, w[unit_at + 1].2),
            });
        }
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
                // "last May": the last May before the anchor's month.
                u if !this && month(u).is_some() => month(u).and_then(|m| {
                    month_period(
                        if m >= a.month() {
                            a.year() - 1
                        } else {
                            a.year()
                        },
                        m,
                    )
                }),
                "weekend" => {
                    let monday = monday_of(a)?;
                    // This week's Saturday, or last week's when the anchor
                    // is before it or "last" is asked.
                    let saturday = monday.checked_add_signed(Duration::days(5))?;
                    let start = if this && a >= saturday {
                        saturday
                    } else {
                        saturday.checked_sub_signed(Duration::days(7))?
                    };
                    Some((start, start.checked_add_signed(Duration::days(2))?))
                }
                "week" => {
                    let monday = monday_of(a)?;
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
    fn metadata_dates_a_message() {
        let meta = serde_json::json!({"turn_id": "D1:3", "session_date": "1:56 pm on 8 May, 2023"});
        assert_eq!(metadata_date(&meta), Some(d(2023, 5, 8)));
        let meta = serde_json::json!({"date": "sometime", "time": "2024-02-03"});
        assert_eq!(metadata_date(&meta), Some(d(2024, 2, 3)));
        assert_eq!(metadata_date(&serde_json::json!({})), None);
        // Other keys that name a date or a time, after the listed ones.
        let meta = serde_json::json!({"dia_id": "D2:1", "date_time": "8:56 pm on 20 July, 2023"});
        assert_eq!(metadata_date(&meta), Some(d(2023, 7, 20)));
        let meta = serde_json::json!({"session_2_date_time": "20 July 2023", "note": "1 May 2020"});
        assert_eq!(metadata_date(&meta), Some(d(2023, 7, 20)));
        let meta = serde_json::json!({"created_at": "2023/07/20", "date": "2022-01-02"});
        assert_eq!(metadata_date(&meta), Some(d(2022, 1, 2)));
        // A key that names no date is not read, nor a value that is no string.
        let meta = serde_json::json!({"birthday": "1 May 1990", "date_time": 20230720});
        assert_eq!(metadata_date(&meta), None);
        // Nor the times a record was written: an imported chat's messages
        // are dated by their own timestamps, not the day of the import.
        let meta = serde_json::json!({"source": "chatgpt", "imported_at": "2026-12-05T10:00:00Z",
            "updated_at": "2026-12-05", "updated": "2026-12-05"});
        assert_eq!(metadata_date(&meta), None);
        let meta = serde_json::json!({"sessionDate": "20 July 2023"});
        assert_eq!(metadata_date(&meta), Some(d(2023, 7, 20)));
        // The relative forms never overflow at the ends of the calendar.
        assert!(query_period("last week", Some(NaiveDate::MIN)).is_none());
    }

    #[test]
    fn seasons_a_question_names() {
        let q = "What did Ana do in the summer of 2018?";
        let p = query_period(q, None).unwrap();
        assert_eq!((p.start, p.end), (d(2018, 6, 1), d(2018, 9, 1)));
        assert_eq!(&q[p.span.0..p.span.1], "in the summer of 2018");
        let p = query_period("plans for winter 2019", None).unwrap();
        assert_eq!((p.start, p.end), (d(2018, 12, 1), d(2019, 3, 1)));
        let p = query_period("during autumn 2020", None).unwrap();
        assert_eq!((p.start, p.end), (d(2020, 9, 1), d(2020, 12, 1)));
        // Relative forms need the anchor; "fall" alone is a verb.
        assert!(query_period("what did she do last summer", None).is_none());
        let july = Some(d(2023, 7, 10));
        let october = Some(d(2023, 10, 10));
        let march = Some(d(2023, 3, 10));
        let q = "How did Otto lose his glasses last summer?";
        let p = query_period(q, july).unwrap();
        assert_eq!((p.start, p.end), (d(2022, 6, 1), d(2022, 9, 1)));
        assert_eq!(&q[p.span.0..p.span.1], "last summer");
        assert_eq!(query_period(q, october).unwrap().start, d(2023, 6, 1));
        assert_eq!(
            query_period("this summer", july).unwrap().start,
            d(2023, 6, 1)
        );
        assert_eq!(
            query_period("this summer", october).unwrap().start,
            d(2023, 6, 1)
        );
        assert_eq!(
            query_period("this summer", march).unwrap().start,
            d(2023, 6, 1)
        );
        assert_eq!(
            query_period("this winter", march).unwrap().start,
            d(2022, 12, 1)
        );
        let q = "what did we plant in the spring";
        let p = query_period(q, july).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 1), d(2023, 6, 1)));
        assert_eq!(&q[p.span.0..p.span.1], "in the spring");
        assert_eq!(
            query_period("in the spring", march).unwrap().start,
            d(2023, 3, 1)
        );
        assert_eq!(
            query_period("over the winter", march).unwrap().start,
            d(2022, 12, 1)
        );
        assert!(query_period("did Zara fall off her bike", july).is_none());
        assert!(query_period("a spring in the mattress", july).is_none());
        assert!(query_period("the summer before college", july).is_none());
        // A year after "fall in" is a year, not the season.
        let p = query_period("when did Otto fall in 2018", None).unwrap();
        assert_eq!((p.start, p.end), (d(2018, 1, 1), d(2019, 1, 1)));
    }

    #[test]
    fn spans_counted_from_a_date() {
        for (q, span, start, end) in [
            (
                "the week before 8 May 2023",
                "the week before 8 May 2023",
                d(2023, 5, 1),
                d(2023, 5, 8),
            ),
            (
                "two weeks before 8 May 2023",
                "two weeks before 8 May 2023",
                d(2023, 4, 24),
                d(2023, 5, 1),
            ),
            (
                "what did she do 3 days after 5 June 2023",
                "3 days after 5 June 2023",
                d(2023, 6, 8),
                d(2023, 6, 9),
            ),
            (
                "the day after 5 June 2023",
                "the day after 5 June 2023",
                d(2023, 6, 6),
                d(2023, 6, 7),
            ),
            (
                "a week after 5 June 2023",
                "a week after 5 June 2023",
                d(2023, 6, 6),
                d(2023, 6, 13),
            ),
        ] {
            let p = query_period(q, None).unwrap_or_else(|| panic!("{q}"));
            assert_eq!((p.start, p.end), (start, end), "{q}");
            assert_eq!(&q[p.span.0..p.span.1], span, "{q}");
        }
        // The week or weekend that holds the date (8 May 2023 is a Monday).
        let q = "what happened during the week of 10 May 2023?";
        let p = query_period(q, None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 8), d(2023, 5, 15)));
        assert_eq!(&q[p.span.0..p.span.1], "during the week of 10 May 2023");
        let p = query_period("over the weekend of 10 May 2023", None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 13), d(2023, 5, 15)));
        let p = query_period("the weekend of 14 May 2023", None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 13), d(2023, 5, 15)));
        // Units without a count name no span: the date alone.
        let p = query_period("weeks before 8 May 2023", None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 8), d(2023, 5, 9)));
    }

    #[test]
    fn parts_of_months_and_years() {
        for (q, span, start, end) in [
            (
                "what did she do in early May 2023?",
                "in early May 2023",
                d(2023, 5, 1),
                d(2023, 5, 11),
            ),
            (
                "plans for mid-June 2023",
                "mid-June 2023",
                d(2023, 6, 11),
                d(2023, 6, 21),
            ),
            (
                "the trip in late February 2024",
                "in late February 2024",
                d(2024, 2, 21),
                d(2024, 3, 1),
            ),
            (
                "by the end of May 2023",
                "by the end of May 2023",
                d(2023, 5, 21),
                d(2023, 6, 1),
            ),
            (
                "at the beginning of March 2023",
                "the beginning of March 2023",
                d(2023, 3, 1),
                d(2023, 3, 11),
            ),
            (
                "during the first week of June 2023",
                "during the first week of June 2023",
                d(2023, 6, 1),
                d(2023, 6, 8),
            ),
            (
                "the last week of April 2023",
                "the last week of April 2023",
                d(2023, 4, 24),
                d(2023, 5, 1),
            ),
            (
                "what changed in early 2023",
                "in early 2023",
                d(2023, 1, 1),
                d(2023, 5, 1),
            ),
            ("mid-2022 plans", "mid-2022", d(2022, 5, 1), d(2022, 9, 1)),
            ("late 2021", "late 2021", d(2021, 9, 1), d(2022, 1, 1)),
        ] {
            let p = query_period(q, None).unwrap_or_else(|| panic!("{q}"));
            assert_eq!((p.start, p.end), (start, end), "{q}");
            assert_eq!(&q[p.span.0..p.span.1], span, "{q}");
        }
        // Without the year: the last such month up to the anchor.
        let a = Some(d(2023, 3, 15));
        assert!(query_period("in early May", None).is_none());
        let p = query_period("in early May", a).unwrap();
        assert_eq!((p.start, p.end), (d(2022, 5, 1), d(2022, 5, 11)));
        let p = query_period("the end of February", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 2, 21), d(2023, 3, 1)));
        // Not parts of a date.
        assert!(query_period("the end of the road", a).is_none());
        assert!(query_period("she was late again", a).is_none());
        assert!(query_period("the first week of class", a).is_none());
    }

    #[test]
    fn session_dates_in_the_usual_shapes() {
        assert_eq!(parse_date("1:56 pm on 8 May, 2023"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("2023-05-08T10:00:00Z"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("May 8th, 2023"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("Sat, 3 Feb 2024 10:00"), Some(d(2024, 2, 3)));
        assert_eq!(parse_date("2023/05/08 13:56"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("session of 2023.05.08"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("on 2023-05-08T10:00"), Some(d(2023, 5, 8)));
        assert_eq!(parse_date("2023-13-08"), None);
        assert_eq!(parse_date("5/8/2023"), None);
        assert_eq!(parse_date("2023 5 8"), None);
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
        // A part of the day named with the date is part of the span.
        for (q, span) in [
            (
                "What did Otto share on the evening of 13 May 2018?",
                "on the evening of 13 May 2018",
            ),
            ("by the night of 11 May 2018", "the night of 11 May 2018"),
            (
                "the snack during the 11 May 2018 morning chat",
                "11 May 2018 morning",
            ),
            ("a run on 8 May 2018 with Ana", "on 8 May 2018"),
        ] {
            let p = query_period(q, None).unwrap();
            assert_eq!(&q[p.span.0..p.span.1], span, "{q:?}");
            assert_eq!(p.end - p.start, Duration::days(1), "{q:?}");
        }
        let p = query_period("plans during 2021?", None).unwrap();
        assert_eq!((p.start, p.end), (d(2021, 1, 1), d(2022, 1, 1)));
        let p = query_period("December 31, 2020 party", None).unwrap();
        assert_eq!((p.start, p.end), (d(2020, 12, 31), d(2021, 1, 1)));
        // Relative forms need the anchor.
        let a = Some(d(2023, 3, 15)); // a Wednesday
        // A day without its year: the last such day up to the anchor, with
        // the part of the day named beside it.
        let q = "Where was the group eating, per the 3 November evening chat?";
        assert!(query_period(q, None).is_none());
        let p = query_period(q, a).unwrap();
        assert_eq!((p.start, p.end), (d(2022, 11, 3), d(2022, 11, 4)));
        assert_eq!(&q[p.span.0..p.span.1], "3 November evening");
        let p = query_period("what happened on March 2?", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 2), d(2023, 3, 3)));
        let p = query_period("the day after 15 March", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 16), d(2023, 3, 17)));
        let q = "what did we plan on the 16th of March?";
        let p = query_period(q, a).unwrap();
        assert_eq!(p.start, d(2022, 3, 16));
        assert_eq!(&q[p.span.0..p.span.1], "16th of March");
        let p = query_period("the 8th of May 2018 chat", None).unwrap();
        assert_eq!(p.start, d(2018, 5, 8));
        assert!(query_period("you may 2 times", a).is_none());
        let p = query_period("what was said on May 5", a).unwrap();
        assert_eq!(p.start, d(2022, 5, 5));
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
        // Weekdays, counts ago, weekends, "last May" (anchor: Wed 15 March).
        let p = query_period("what did she cook last Tuesday?", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 14), d(2023, 3, 15)));
        let q = "the concert on Wednesday";
        let p = query_period(q, a).unwrap();
        assert_eq!(p.start, d(2023, 3, 8), "a week back, not the anchor day");
        assert_eq!(&q[p.span.0..p.span.1], "on Wednesday");
        let p = query_period("three days ago", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 12), d(2023, 3, 13)));
        let p = query_period("2 weeks ago", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 2, 27), d(2023, 3, 6)));
        let q = "a few weeks ago we met";
        let p = query_period(q, a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 2, 13), d(2023, 3, 6)));
        assert_eq!(&q[p.span.0..p.span.1], "a few weeks ago");
        let p = query_period("a month ago", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 2, 1), d(2023, 3, 1)));
        let p = query_period("a couple of years ago", a).unwrap();
        assert_eq!((p.start, p.end), (d(2021, 1, 1), d(2022, 1, 1)));
        let p = query_period("14 months ago", a).unwrap();
        assert_eq!(p.start, d(2022, 1, 1));
        let p = query_period("last weekend", a).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 3, 11), d(2023, 3, 13)));
        let p = query_period("last May", a).unwrap();
        assert_eq!(p.start, d(2022, 5, 1));
        let p = query_period("last February", a).unwrap();
        assert_eq!(p.start, d(2023, 2, 1));
        let p = query_period("last March", a).unwrap();
        assert_eq!(p.start, d(2022, 3, 1), "not the anchor's own month");
        assert_eq!(
            query_period("today", a).map(|p| p.start),
            Some(d(2023, 3, 15))
        );
        assert_eq!(
            query_period("the day before yesterday", a).map(|p| p.start),
            Some(d(2023, 3, 13))
        );
        // Around a named date, with or without the anchor.
        let q = "what happened the week before 8 May 2023?";
        let p = query_period(q, None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 5, 1), d(2023, 5, 8)));
        assert_eq!(&q[p.span.0..p.span.1], "the week before 8 May 2023");
        let p = query_period("the day after 31 December 2022", None).unwrap();
        assert_eq!((p.start, p.end), (d(2023, 1, 1), d(2023, 1, 2)));
        // A weekday needs its preposition, a count its unit and "ago";
        // the forms at the ends of the calendar give none, not a panic.
        assert!(query_period("Tuesday meetings", a).is_none());
        assert!(query_period("two weeks of rain", a).is_none());
        assert!(query_period("99 years ago", Some(NaiveDate::MIN)).is_none());
        assert!(query_period("last Monday", Some(NaiveDate::MIN)).is_none());
        assert!(query_period("the week before 1 January 1900", None).is_some());
        // "may" the verb, bare numbers and no date at all: none.
        assert!(query_period("you may be right", a).is_none());
        assert!(query_period("I have 2018 reasons", a).is_none());
        assert!(query_period("where do they live", a).is_none());
    }

    /// Any mix of date words, in any order, against any anchor (the
    /// calendar's ends included): no panic, a non-empty period, and a span
    /// that lies inside the question on character boundaries.
    mod any_words {
        use super::*;
        use proptest::prelude::*;

        const WORDS: &[&str] = &[
            "in",
            "on",
            "during",
            "over",
            "by",
            "the",
            "of",
            "last",
            "this",
            "past",
            "next",
            "early",
            "mid",
            "late",
            "beginning",
            "start",
            "middle",
            "end",
            "first",
            "second",
            "third",
            "fourth",
            "week",
            "weeks",
            "day",
            "days",
            "month",
            "months",
            "year",
            "years",
            "ago",
            "a",
            "few",
            "couple",
            "before",
            "after",
            "yesterday",
            "today",
            "weekend",
            "may",
            "May",
            "june",
            "December",
            "feb",
            "spring",
            "summer",
            "fall",
            "autumn",
            "winter",
            "tuesday",
            "sunday",
            "morning",
            "evening",
            "1",
            "8th",
            "31",
            "32",
            "0",
            "12",
            "1899",
            "1900",
            "2018",
            "2200",
            "2201",
            "-",
            ",",
            "é",
            "zara",
        ];

        fn question() -> impl Strategy<Value = String> {
            proptest::collection::vec(
                (
                    0..WORDS.len(),
                    prop_oneof![Just(" "), Just("-"), Just(", ")],
                ),
                0..9,
            )
            .prop_map(|ws| {
                ws.iter()
                    .map(|(i, sep)| format!("{}{sep}", WORDS[*i]))
                    .collect::<String>()
            })
        }

        fn anchor() -> impl Strategy<Value = Option<NaiveDate>> {
            prop_oneof![
                Just(None),
                Just(Some(NaiveDate::MIN)),
                Just(Some(NaiveDate::MAX)),
                (1900i32..2200, 1u32..=366).prop_map(|(y, o)| NaiveDate::from_yo_opt(y, o)),
            ]
        }

        proptest! {
            #[test]
            fn a_period_is_well_formed(q in question(), a in anchor()) {
                if let Some(p) = query_period(&q, a) {
                    prop_assert!(p.start < p.end, "{q:?}: {p:?}");
                    prop_assert!(p.span.0 < p.span.1 && p.span.1 <= q.len(), "{q:?}: {p:?}");
                    prop_assert!(q.get(p.span.0..p.span.1).is_some(), "{q:?}: {p:?}");
                }
            }
        }
    }
}
