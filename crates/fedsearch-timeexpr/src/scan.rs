//! The phrase scanner: every time phrase in a text, as a span of local calendar days.
//!
//! Each matcher tries to read one kind of phrase at a position and returns where it ends and the
//! days it covers. [`best`] runs every matcher at every position, drops phrases glued to a longer
//! token (INV-2025-0042), keeps the longest of overlapping phrases and picks the most specific.

use chrono::{Datelike, Days, Months, NaiveDate};

/// How fine a phrase is; finer wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Grain {
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// Local calendar days: `first` up to `end_date`, exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub grain: Grain,
    /// Named dates (2026-11-03, October, Q3) rather than words relative to today.
    pub explicit: bool,
    pub first: NaiveDate,
    pub end_date: NaiveDate,
}

/// One phrase found in the text: its byte range and its days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    pub first: NaiveDate,
    pub end_date: NaiveDate,
    grain: Grain,
    explicit: bool,
}

type Matcher = fn(Cur<'_>, NaiveDate) -> Option<(usize, Span)>;

const MATCHERS: &[Matcher] = &[relative_day, calendar_relative, rolling, explicit, year_with_word, quarter];

/// The most specific phrase in `text`, with `today` the local day of the question.
pub(crate) fn best(text: &str, today: NaiveDate) -> Option<Found> {
    // ASCII-only lowering keeps every byte offset valid in the original text.
    let s = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for (start, _) in s.char_indices() {
        for matcher in MATCHERS {
            if let Some((end, span)) = matcher(Cur { s: &s, pos: start }, today)
                && end > start
                && !glued(&s, start, end)
            {
                found.push(Found {
                    start,
                    end,
                    first: span.first,
                    end_date: span.end_date,
                    grain: span.grain,
                    explicit: span.explicit,
                });
            }
        }
    }
    found.sort_by_key(|f| (std::cmp::Reverse(f.end - f.start), f.start));
    let mut kept: Vec<Found> = Vec::new();
    for f in found {
        if kept.iter().all(|k| f.end <= k.start || k.end <= f.start) {
            kept.push(f);
        }
    }
    kept.into_iter().min_by_key(|f| (f.grain, !f.explicit, f.start))
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `s[start..end]` is part of a longer token: a letter or digit touches it, directly or
/// across one of `-/._` (the 2025 in INV-2025-0042).
fn glued(s: &str, start: usize, end: usize) -> bool {
    fn touches(mut outward: impl Iterator<Item = char>) -> bool {
        match outward.next() {
            Some(c) if is_word_char(c) => true,
            Some('-' | '/' | '.') => outward.next().is_some_and(is_word_char),
            _ => false,
        }
    }
    let starts_in_word = s[start..].chars().next().is_some_and(is_word_char);
    let ends_in_word = s[..end].chars().next_back().is_some_and(is_word_char);
    (starts_in_word && touches(s[..start].chars().rev())) || (ends_in_word && touches(s[end..].chars()))
}

/// A position in the lowered text; matchers copy it to backtrack.
#[derive(Debug, Clone, Copy)]
struct Cur<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cur<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Reads `lit` exactly.
    fn lit(&mut self, lit: &str) -> bool {
        let ok = self.rest().starts_with(lit);
        if ok {
            self.pos += lit.len();
        }
        ok
    }

    /// Reads a phrase: its words separated by any whitespace, ending on a word boundary when it
    /// ends in a letter or digit (so "oct" does not read the start of "octopus").
    fn phrase(&mut self, phrase: &str) -> bool {
        let save = *self;
        for (i, word) in phrase.split(' ').enumerate() {
            if (i > 0 && !self.ws1()) || !self.lit(word) {
                *self = save;
                return false;
            }
        }
        if phrase.ends_with(is_word_char) && self.peek().is_some_and(is_word_char) {
            *self = save;
            return false;
        }
        true
    }

    /// Reads the longest phrase of `table` and returns its value.
    fn longest<T: Copy>(&mut self, table: &[(&str, T)]) -> Option<T> {
        let mut best: Option<(Cur<'a>, T)> = None;
        for &(phrase, value) in table {
            let mut c = *self;
            if c.phrase(phrase) && best.is_none_or(|(b, _)| c.pos > b.pos) {
                best = Some((c, value));
            }
        }
        let (c, value) = best?;
        *self = c;
        Some(value)
    }

    fn ws0(&mut self) {
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.pos += c.len_utf8();
        }
    }

    fn ws1(&mut self) -> bool {
        let before = self.pos;
        self.ws0();
        self.pos > before
    }

    /// Reads a whole run of ASCII digits: its value (saturated) and its length.
    fn digits(&mut self) -> Option<(u32, usize)> {
        let len = self.rest().bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        let run = &self.rest()[..len];
        self.pos += len;
        Some((run.parse().unwrap_or(u32::MAX), len))
    }

    /// Reads a number of one or two digits, as days and months are written.
    fn small(&mut self) -> Option<u32> {
        let save = *self;
        match self.digits() {
            Some((n, len)) if len <= 2 => Some(n),
            _ => {
                *self = save;
                None
            }
        }
    }

    /// Reads a four-digit year from 1900 to 2100.
    fn year(&mut self) -> Option<i32> {
        let save = *self;
        match self.digits() {
            Some((y @ 1900..=2100, 4)) => Some(y as i32),
            _ => {
                *self = save;
                None
            }
        }
    }

    /// Reads a Chinese numeral up to 99 (三, 十五, 二十三, 两): its value and whether it used 两,
    /// which counts things but never names a month or a day.
    fn chinese_number(&mut self) -> Option<(u32, bool)> {
        fn digit(c: char) -> Option<u32> {
            "零一二三四五六七八九".chars().position(|d| d == c).map(|d| d as u32).or((c == '两').then_some(2))
        }
        let mut chars = self.rest().char_indices().peekable();
        let (mut value, mut liang, mut len) = (0, false, 0);
        if let Some(&(_, c)) = chars.peek()
            && let Some(d) = digit(c)
        {
            value = d;
            liang = c == '两';
            len = c.len_utf8();
            chars.next();
        }
        if let Some(&(i, '十')) = chars.peek() {
            value = if len == 0 { 10 } else { value * 10 };
            len = i + '十'.len_utf8();
            chars.next();
            if let Some(&(i, c)) = chars.peek()
                && let Some(d) = digit(c).filter(|_| c != '两')
            {
                value += d;
                len = i + c.len_utf8();
            }
        }
        if len == 0 || value == 0 {
            return None;
        }
        self.pos += len;
        Some((value, liang))
    }

    /// Reads a count: digits or a Chinese numeral.
    fn count_zh(&mut self) -> Option<u32> {
        self.digits().map(|(n, _)| n).or_else(|| self.chinese_number().map(|(n, _)| n))
    }

    /// Reads an ordinal for a month or a day: one or two digits, or a Chinese numeral without 两.
    fn ordinal_zh(&mut self) -> Option<u32> {
        let save = *self;
        let n = self.small().or_else(|| self.chinese_number().filter(|&(_, liang)| !liang).map(|(n, _)| n));
        if n.is_none() {
            *self = save;
        }
        n
    }

    /// Reads a count in English: digits or a number word.
    fn count_en(&mut self) -> Option<u32> {
        const WORDS: &[(&str, u32)] = &[
            ("one", 1),
            ("two", 2),
            ("three", 3),
            ("four", 4),
            ("five", 5),
            ("six", 6),
            ("seven", 7),
            ("eight", 8),
            ("nine", 9),
            ("ten", 10),
            ("eleven", 11),
            ("twelve", 12),
            ("fourteen", 14),
            ("fifteen", 15),
            ("twenty", 20),
            ("thirty", 30),
        ];
        self.digits().map(|(n, _)| n).or_else(|| self.longest(WORDS))
    }

    /// Reads a day of the month in English: 3, 03, 3rd.
    fn day_en(&mut self) -> Option<u32> {
        let save = *self;
        let day = self.small().filter(|d| (1..=31).contains(d));
        if day.is_some() {
            let _ = ["st", "nd", "rd", "th"].iter().any(|suffix| self.lit(suffix));
            if !self.peek().is_some_and(is_word_char) {
                return day;
            }
        }
        *self = save;
        None
    }

    /// Reads a year after a month or a day: " 2026", ", 2026", " of 2026".
    fn year_tail(&mut self) -> Option<i32> {
        let save = *self;
        let spaced = self.ws1();
        let comma = self.lit(",");
        self.ws0();
        if self.phrase("of") && !self.ws1() {
            *self = save;
            return None;
        }
        match self.year().filter(|_| (spaced || comma) && !self.peek().is_some_and(is_word_char)) {
            Some(y) => Some(y),
            None => {
                *self = save;
                None
            }
        }
    }

    /// Reads a year written the Chinese way: 2026年, 今年, 去年, 前年.
    fn year_zh(&mut self, today: NaiveDate) -> Option<i32> {
        let save = *self;
        if let Some(y) = self.year()
            && self.lit("年")
        {
            return Some(y);
        }
        *self = save;
        self.longest(&[("今年", 0), ("去年", 1), ("前年", 2)]).map(|back| today.year() - back)
    }
}

fn day_span(grain: Grain, explicit: bool, first: NaiveDate, last: NaiveDate) -> Option<Span> {
    Some(Span { grain, explicit, first, end_date: last.succ_opt()? })
}

fn month_start(year: i32, month: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(year, month, 1)
}

fn year_span(year: i32, explicit: bool) -> Option<Span> {
    Some(Span {
        grain: Grain::Year,
        explicit,
        first: NaiveDate::from_ymd_opt(year, 1, 1)?,
        end_date: NaiveDate::from_ymd_opt(year + 1, 1, 1)?,
    })
}

/// A whole calendar quarter, numbered 1 to 4.
fn quarter_span(year: i32, quarter: u32, explicit: bool) -> Option<Span> {
    let first = month_start(year, quarter * 3 - 2)?;
    Some(Span { grain: Grain::Quarter, explicit, first, end_date: first.checked_add_months(Months::new(3))? })
}

/// 今天, 昨天, 前天, today, yesterday, the day before yesterday.
fn relative_day(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const DAYS_BACK: &[(&str, u64)] = &[
        ("今天", 0),
        ("今日", 0),
        ("今儿", 0),
        ("今早", 0),
        ("今晚", 0),
        ("昨天", 1),
        ("昨日", 1),
        ("昨儿", 1),
        ("昨晚", 1),
        ("前天", 2),
        ("前日", 2),
        ("大前天", 3),
        ("today", 0),
        ("tonight", 0),
        ("this morning", 0),
        ("this afternoon", 0),
        ("this evening", 0),
        ("yesterday", 1),
        ("day before yesterday", 2),
        ("the day before yesterday", 2),
    ];
    let back = c.longest(DAYS_BACK)?;
    let day = today.checked_sub_days(Days::new(back))?;
    Some((c.pos, day_span(Grain::Day, false, day, day)?))
}

#[derive(Debug, Clone, Copy)]
enum Relative {
    ThisWeek,
    LastWeek,
    ThisMonth,
    LastMonth,
    ThisQuarter,
    LastQuarter,
    ThisYear,
    LastYear,
    YearBeforeLast,
}

/// 本周, 上个月, 去年, this week, last month: calendar periods named relative to today.
fn calendar_relative(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    use Relative::*;
    const TABLE: &[(&str, Relative)] = &[
        ("本周", ThisWeek),
        ("这周", ThisWeek),
        ("这一周", ThisWeek),
        ("本星期", ThisWeek),
        ("这星期", ThisWeek),
        ("这个星期", ThisWeek),
        ("本礼拜", ThisWeek),
        ("这礼拜", ThisWeek),
        ("这个礼拜", ThisWeek),
        ("上周", LastWeek),
        ("上一周", LastWeek),
        ("上星期", LastWeek),
        ("上个星期", LastWeek),
        ("上礼拜", LastWeek),
        ("上个礼拜", LastWeek),
        ("本月", ThisMonth),
        ("这月", ThisMonth),
        ("这个月", ThisMonth),
        ("当月", ThisMonth),
        ("上月", LastMonth),
        ("上个月", LastMonth),
        ("上一个月", LastMonth),
        ("本季", ThisQuarter),
        ("本季度", ThisQuarter),
        ("这季度", ThisQuarter),
        ("这个季度", ThisQuarter),
        ("上季", LastQuarter),
        ("上季度", LastQuarter),
        ("上个季度", LastQuarter),
        ("上一季度", LastQuarter),
        ("今年", ThisYear),
        ("本年", ThisYear),
        ("本年度", ThisYear),
        ("去年", LastYear),
        ("上一年", LastYear),
        ("前年", YearBeforeLast),
        ("this week", ThisWeek),
        ("last week", LastWeek),
        ("previous week", LastWeek),
        ("this month", ThisMonth),
        ("last month", LastMonth),
        ("previous month", LastMonth),
        ("this quarter", ThisQuarter),
        ("last quarter", LastQuarter),
        ("previous quarter", LastQuarter),
        ("this year", ThisYear),
        ("last year", LastYear),
        ("previous year", LastYear),
    ];
    let relative = c.longest(TABLE)?;
    let tomorrow = today.succ_opt()?;
    let monday = today.checked_sub_days(Days::new(today.weekday().num_days_from_monday().into()))?;
    let this_month = month_start(today.year(), today.month())?;
    let this_quarter = month_start(today.year(), today.month0() / 3 * 3 + 1)?;
    let (grain, first, end_date) = match relative {
        ThisWeek => (Grain::Week, monday, tomorrow),
        LastWeek => (Grain::Week, monday.checked_sub_days(Days::new(7))?, monday),
        ThisMonth => (Grain::Month, this_month, tomorrow),
        LastMonth => (Grain::Month, this_month.checked_sub_months(Months::new(1))?, this_month),
        ThisQuarter => (Grain::Quarter, this_quarter, tomorrow),
        LastQuarter => (Grain::Quarter, this_quarter.checked_sub_months(Months::new(3))?, this_quarter),
        ThisYear => (Grain::Year, NaiveDate::from_ymd_opt(today.year(), 1, 1)?, tomorrow),
        LastYear => return Some((c.pos, year_span(today.year() - 1, false)?)),
        YearBeforeLast => return Some((c.pos, year_span(today.year() - 2, false)?)),
    };
    Some((c.pos, Span { grain, explicit: false, first, end_date }))
}

#[derive(Debug, Clone, Copy)]
enum Unit {
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// 最近三天, 近两周, 过去一个月, last 7 days, the past 2 weeks, past month: the period ending today.
fn rolling(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (n, unit) = rolling_zh(&mut c).or_else(|| rolling_en(&mut c))?;
    let tomorrow = today.succ_opt()?;
    let (grain, since) = match unit {
        Unit::Day => (Grain::Day, today.checked_sub_days(Days::new(u64::from(n)))?),
        Unit::Week => (Grain::Week, today.checked_sub_days(Days::new(7 * u64::from(n)))?),
        Unit::Month => (Grain::Month, today.checked_sub_months(Months::new(n))?),
        Unit::Quarter => (Grain::Quarter, today.checked_sub_months(Months::new(n.checked_mul(3)?))?),
        Unit::Year => (Grain::Year, today.checked_sub_months(Months::new(n.checked_mul(12)?))?),
    };
    Some((c.pos, Span { grain, explicit: false, first: since.succ_opt()?, end_date: tomorrow }))
}

/// 最近三天, 近两周, 过去的一个月, 最近7天内: a count and its unit.
fn rolling_zh(c: &mut Cur<'_>) -> Option<(u32, Unit)> {
    const UNITS: &[(&str, Unit)] = &[
        ("天", Unit::Day),
        ("日", Unit::Day),
        ("周", Unit::Week),
        ("星期", Unit::Week),
        ("个星期", Unit::Week),
        ("礼拜", Unit::Week),
        ("个礼拜", Unit::Week),
        ("个月", Unit::Month),
        ("季度", Unit::Quarter),
        ("个季度", Unit::Quarter),
        ("年", Unit::Year),
    ];
    let mut r = *c;
    r.longest(&[("最近", ()), ("近", ()), ("近来", ()), ("过去", ())])?;
    r.lit("的");
    r.ws0();
    let n = r.count_zh().filter(|&n| n > 0)?;
    r.ws0();
    let unit = r.longest(UNITS)?;
    r.longest(&[("内", ()), ("以内", ()), ("以来", ()), ("里", ())]);
    *c = r;
    Some((n, unit))
}

/// the last 7 days, past 2 weeks, previous 5 days, the past week: a count (one when left out) and its unit.
fn rolling_en(c: &mut Cur<'_>) -> Option<(u32, Unit)> {
    const UNITS: &[(&str, Unit)] = &[
        ("day", Unit::Day),
        ("week", Unit::Week),
        ("month", Unit::Month),
        ("quarter", Unit::Quarter),
        ("year", Unit::Year),
        ("days", Unit::Day),
        ("weeks", Unit::Week),
        ("months", Unit::Month),
        ("quarters", Unit::Quarter),
        ("years", Unit::Year),
    ];
    let mut r = *c;
    if r.phrase("the") && !r.ws1() {
        return None;
    }
    let past = r.phrase("past");
    if (!past && r.longest(&[("last", ()), ("previous", ())]).is_none()) || !r.ws1() {
        return None;
    }
    let mut counted = r;
    if let Some(n) = counted.count_en().filter(|&n| n > 0)
        && counted.ws1()
        && let Some(unit) = counted.longest(UNITS)
    {
        *c = counted;
        return Some((n, unit));
    }
    // "past week" is rolling; "last week" is the calendar week, read by calendar_relative.
    let unit = r.longest(&UNITS[..5]).filter(|_| past)?;
    *c = r;
    Some((1, unit))
}

/// A date as written, before its missing parts are filled in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Partial {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
}

impl Partial {
    fn grain(self) -> Grain {
        match self {
            Partial { day: Some(_), .. } => Grain::Day,
            Partial { month: Some(_), .. } => Grain::Month,
            _ => Grain::Year,
        }
    }

    /// The days it names, first and end (exclusive). Without a year, the most recent one that has
    /// begun by `today`.
    fn span(self, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
        match self {
            Partial { year: Some(y), month: None, day: None } => {
                let span = year_span(y, true)?;
                Some((span.first, span.end_date))
            }
            Partial { year, month: Some(m), day: None } => {
                let y = year.unwrap_or(if m <= today.month() { today.year() } else { today.year() - 1 });
                let first = month_start(y, m)?;
                Some((first, first.checked_add_months(Months::new(1))?))
            }
            Partial { year: Some(y), month: Some(m), day: Some(d) } => {
                let day = NaiveDate::from_ymd_opt(y, m, d)?;
                Some((day, day.succ_opt()?))
            }
            Partial { year: None, month: Some(m), day: Some(d) } => {
                // Eight years back always reach a 29 February.
                let day = (0..8)
                    .find_map(|back| NaiveDate::from_ymd_opt(today.year() - back, m, d).filter(|&day| day <= today))?;
                Some((day, day.succ_opt()?))
            }
            _ => None,
        }
    }
}

type PartialReader = fn(&mut Cur<'_>, NaiveDate) -> Option<Partial>;

/// Reads the longest date as written: 2026-11-03, 2026/11, 2026年11月3日, 11月3号, 十月, Nov 3,
/// 3 November 2026, October.
fn partial(c: &mut Cur<'_>, today: NaiveDate) -> Option<Partial> {
    const READERS: [PartialReader; 4] = [iso, chinese, month_first, day_first];
    let mut best: Option<(Cur<'_>, Partial)> = None;
    for read in READERS {
        let mut r = *c;
        if let Some(p) = read(&mut r, today)
            && best.is_none_or(|(b, _)| r.pos > b.pos)
        {
            best = Some((r, p));
        }
    }
    let (r, p) = best?;
    *c = r;
    Some(p)
}

/// 2026-11-03, 2026/11/03, 2026.11.03, 2026-11, 2026/11.
fn iso(c: &mut Cur<'_>, _today: NaiveDate) -> Option<Partial> {
    let mut r = *c;
    let year = r.year()?;
    let sep = r.peek().filter(|s| matches!(s, '-' | '/' | '.'))?;
    r.pos += 1;
    let month = r.small().filter(|m| (1..=12).contains(m))?;
    let mut p = Partial { year: Some(year), month: Some(month), day: None };
    let mut d = r;
    if d.peek() == Some(sep) {
        d.pos += 1;
        if let Some(day) = d.small().filter(|d| (1..=31).contains(d)) {
            p.day = Some(day);
            r = d;
        }
    }
    // 2026.11 reads as a number more often than as a month.
    if p.day.is_none() && sep == '.' {
        return None;
    }
    *c = r;
    Some(p)
}

/// 2026年, 2026年11月, 11月, 十一月, 11月份, 11月3日, 11月3号, 去年11月.
fn chinese(c: &mut Cur<'_>, today: NaiveDate) -> Option<Partial> {
    let mut r = *c;
    let year = r.year_zh(today);
    let mut p = Partial { year, ..Partial::default() };
    let mut m = r;
    m.ws0();
    if let Some(month) = m.ordinal_zh().filter(|m| (1..=12).contains(m))
        && m.lit("月")
    {
        p.month = Some(month);
        r = m;
        let mut d = r;
        if let Some(day) = d.ordinal_zh().filter(|d| (1..=31).contains(d))
            && d.longest(&[("日", ()), ("号", ())]).is_some()
        {
            p.day = Some(day);
            r = d;
        } else {
            r.lit("份");
        }
    }
    // A year alone counts when written in digits; 今年 and 去年 alone are read by calendar_relative.
    if p.month.is_none() && !(year.is_some() && c.peek().is_some_and(|ch| ch.is_ascii_digit())) {
        return None;
    }
    *c = r;
    Some(p)
}

/// Reads a month's name: its number and whether it may stand alone, without a day or a year.
fn month_name(c: &mut Cur<'_>) -> Option<(u32, bool)> {
    const FULL: &[(&str, u32)] = &[
        ("january", 1),
        ("february", 2),
        ("march", 3),
        ("april", 4),
        ("may", 5),
        ("june", 6),
        ("july", 7),
        ("august", 8),
        ("september", 9),
        ("october", 10),
        ("november", 11),
        ("december", 12),
    ];
    const SHORT: &[(&str, u32)] = &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("sept", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ];
    if let Some(m) = c.longest(FULL) {
        // "may" and "march" are also common words.
        return Some((m, m != 3 && m != 5));
    }
    let m = c.longest(SHORT)?;
    c.lit(".");
    Some((m, false))
}

/// October, Oct 2026, October, 2026, Nov 3, November 3rd, November 3, 2026.
fn month_first(c: &mut Cur<'_>, _today: NaiveDate) -> Option<Partial> {
    let mut r = *c;
    let (month, alone) = month_name(&mut r)?;
    let mut p = Partial { month: Some(month), ..Partial::default() };
    let mut d = r;
    if d.ws1()
        && let Some(day) = d.day_en()
    {
        p.day = Some(day);
        r = d;
    }
    p.year = r.year_tail();
    if p.day.is_none() && p.year.is_none() && !alone {
        return None;
    }
    *c = r;
    Some(p)
}

/// 3 November, 3rd of November, 3 Nov 2026.
fn day_first(c: &mut Cur<'_>, _today: NaiveDate) -> Option<Partial> {
    let mut r = *c;
    let day = r.day_en()?;
    if !r.ws1() || (r.phrase("of") && !r.ws1()) {
        return None;
    }
    let (month, _) = month_name(&mut r)?;
    let year = r.year_tail();
    *c = r;
    Some(Partial { year, month: Some(month), day: Some(day) })
}

/// Named dates, months and years, alone or as a range: 2026-11-03, 十月, Oct 2026, 2025年,
/// from Nov 1 to Nov 15, between Nov 1 and Nov 15, 11月1日至15日.
fn explicit(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let between = c.longest(&[("from", false), ("between", true)]);
    if between.is_some() && !c.ws1() {
        return None;
    }
    let start = partial(&mut c, today)?;
    let (first, end_date) = start.span(today)?;
    if let Some((end_date, end_grain)) = range_end(&mut c, start, first, between == Some(true), today) {
        return Some((c.pos, Span { grain: start.grain().min(end_grain), explicit: true, first, end_date }));
    }
    // "from" and "between" belong to a range; the date alone is read from its own position.
    if between.is_some() {
        return None;
    }
    Some((c.pos, Span { grain: start.grain(), explicit: true, first, end_date }))
}

/// Reads the end of a range after its start (" to Nov 15", "至15日", "..2026-11-15"): the day after
/// its last day and its grain. The end takes a missing year, and month, from the start.
fn range_end(
    c: &mut Cur<'_>,
    start: Partial,
    first: NaiveDate,
    between: bool,
    today: NaiveDate,
) -> Option<(NaiveDate, Grain)> {
    const TO: &[(&str, ())] = &[
        ("to", ()),
        ("through", ()),
        ("thru", ()),
        ("until", ()),
        ("till", ()),
        ("-", ()),
        ("–", ()),
        ("—", ()),
        ("~", ()),
        ("～", ()),
        ("..", ()),
        ("...", ()),
        ("到", ()),
        ("至", ()),
    ];
    let mut r = *c;
    r.ws0();
    if between { r.phrase("and") } else { r.longest(TO).is_some() }.then_some(())?;
    r.ws0();
    let mut full = r;
    let end = match partial(&mut full, today) {
        Some(p) => {
            r = full;
            p
        }
        None if start.day.is_some() => {
            let day = r.day_en().or_else(|| r.ordinal_zh().filter(|_| r.rest().starts_with(['日', '号'])))?;
            r.longest(&[("日", ()), ("号", ())]);
            Partial { year: None, month: Some(first.month()), day: Some(day) }
        }
        None => return None,
    };
    let end = match end {
        Partial { year: None, month: Some(_), .. } => {
            let same = Partial { year: Some(first.year()), ..end };
            if same.span(today)?.0 < first { Partial { year: Some(first.year() + 1), ..end } } else { same }
        }
        _ => end,
    };
    let (_, end_date) = end.span(today)?;
    (end_date > first).then_some(())?;
    *c = r;
    Some((end_date, end.grain()))
}

/// in 2025, during 2025, year 2025: a bare number is a year only after such a word.
fn year_with_word(mut c: Cur<'_>, _today: NaiveDate) -> Option<(usize, Span)> {
    c.longest(&[("in", ()), ("during", ()), ("throughout", ()), ("for", ()), ("year", ())])?;
    c.ws1().then_some(())?;
    let year = c.year()?;
    Some((c.pos, year_span(year, true)?))
}

/// Q3, Q3 2026, 2026 Q3, 2026-Q3, third quarter of 2026, 第三季度, 三季度, 2026年第三季度, 2026年Q3.
fn quarter(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let mut with_year = c;
    let mut year = with_year.year_zh(today).or_else(|| {
        let y = with_year.year()?;
        if !with_year.ws1() {
            with_year.lit("-");
        }
        Some(y)
    });
    if year.is_some() {
        with_year.ws0();
        c = with_year;
    }
    let q = quarter_number(&mut c)?;
    if year.is_none() {
        year = c.year_tail();
        let mut dashed = c;
        if year.is_none()
            && dashed.lit("-")
            && let Some(y) = dashed.year()
        {
            year = Some(y);
            c = dashed;
        }
    }
    let year = year.unwrap_or(if q * 3 - 2 <= today.month() { today.year() } else { today.year() - 1 });
    Some((c.pos, quarter_span(year, q, true)?))
}

fn quarter_number(c: &mut Cur<'_>) -> Option<u32> {
    const ORDINALS: &[(&str, u32)] =
        &[("first", 1), ("1st", 1), ("second", 2), ("2nd", 2), ("third", 3), ("3rd", 3), ("fourth", 4), ("4th", 4)];
    let mut q = *c;
    if q.lit("q")
        && let Some((n @ 1..=4, 1)) = q.digits()
    {
        *c = q;
        return Some(n);
    }
    let mut zh = *c;
    zh.lit("第");
    if let Some(n) = zh.ordinal_zh().filter(|n| (1..=4).contains(n))
        && zh.longest(&[("季度", ()), ("季", ())]).is_some()
    {
        *c = zh;
        return Some(n);
    }
    let mut en = *c;
    let n = en.longest(ORDINALS)?;
    (en.ws1() && en.phrase("quarter")).then_some(())?;
    *c = en;
    Some(n)
}
