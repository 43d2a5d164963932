//! The phrase scanner: every time phrase in a text, as a span of local calendar days.
//!
//! Each matcher tries to read one kind of phrase at a position and returns where it ends and the
//! days it covers. [`best`] runs every matcher at every position, drops phrases glued to a longer
//! token (INV-2025-0042), keeps the longest of overlapping phrases and picks the most specific.
//! Some phrases name no window (周一至周五, every Monday, next Friday, 本周五 before it has begun):
//! they are read too, so that they hide the shorter phrases inside them, and then dropped.

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

/// How fine a phrase is; finer wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Grain {
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    HalfYear,
    Year,
}

/// Local calendar days: `first` up to `end_date`, exclusive; or the hours before the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub grain: Grain,
    /// Named dates (2026-11-03, October, Q3) rather than words relative to today.
    pub explicit: bool,
    pub first: NaiveDate,
    pub end_date: NaiveDate,
    /// The window is the last so many hours before the question (past 24 hours), not whole days;
    /// `first` and `end_date` are then only today.
    pub hours: Option<u32>,
    /// The end (exclusive) of the calendar period the phrase names when the window stops at
    /// today before it: this week, this month, this quarter, this year.
    pub period_end: Option<NaiveDate>,
    /// The phrase looks ahead: tomorrow, next week, 下个月, 未来30天, 月底前 (see
    /// [`crate::Window::ahead`]).
    pub ahead: bool,
}

impl Span {
    fn days(grain: Grain, explicit: bool, first: NaiveDate, end_date: NaiveDate) -> Span {
        Span { grain, explicit, first, end_date, hours: None, period_end: None, ahead: false }
    }

    /// Days still to come, named by a phrase that looks ahead.
    fn ahead(grain: Grain, explicit: bool, first: NaiveDate, end_date: NaiveDate) -> Span {
        Span { ahead: true, ..Span::days(grain, explicit, first, end_date) }
    }
}

/// One phrase found in the text: its byte range and its days (or hours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    pub first: NaiveDate,
    pub end_date: NaiveDate,
    pub hours: Option<u32>,
    /// See [`Span::period_end`].
    pub period_end: Option<NaiveDate>,
    /// See [`Span::ahead`].
    pub ahead: bool,
    grain: Grain,
    explicit: bool,
}

type Matcher = fn(Cur<'_>, NaiveDate) -> Option<(usize, Span)>;

/// The window matchers, in the order their finds are kept, around the "since" phrase (read
/// once per place for both of its readings, window or not: see `best`).
const MATCHERS_BEFORE_SINCE: &[Matcher] = &[
    relative_day,
    calendar_relative,
    month_part,
    week_of,
    weekend,
    holiday,
    rolling,
    few_days,
    explicit,
    year_with_word,
    quarter,
    half_year,
    weekday,
];
const MATCHERS_AFTER_SINCE: &[Matcher] = &[ago, before, by_end];

/// The most specific phrase in `text`, with `today` the local day of the question.
pub(crate) fn best(text: &str, today: NaiveDate) -> Option<Found> {
    windows(text, today, &[]).into_iter().min_by_key(|f| (f.grain, !f.explicit, f.start))
}

/// Every window a document's `text` names, in text order, with `today` the document's own local
/// day: the question's phrases and the ISO weeks documents name by number ([`week_number`]).
pub(crate) fn all(text: &str, today: NaiveDate) -> Vec<Found> {
    windows(text, today, &[week_number])
}

/// The windows of `text` (`extra` matchers run beside the question's ones), longest of
/// overlapping phrases kept, alternatives joined, phrases that name no window dropped.
fn windows(text: &str, today: NaiveDate, extra: &[Matcher]) -> Vec<Found> {
    // ASCII-only lowering keeps every byte offset valid in the original text.
    let s = text.to_ascii_lowercase();
    let mut found: Vec<(usize, usize, Option<Span>)> = Vec::new();
    for (start, _) in s.char_indices() {
        // A phrase starting inside a word is glued to it whatever its end (see `glued`).
        if starts_glued(&s, start) {
            continue;
        }
        let at = Cur { s: &s, pos: start };
        let run = |matchers: &'static [Matcher]| {
            matchers.iter().filter_map(move |m| m(at, today)).map(|(end, span)| (end, Some(span)))
        };
        // "since 2027-01-01" asked in 2026: a start to come, which names no window (rather than
        // the day); a start that has begun gives the days from it through today.
        let since = since_phrase(at, today);
        let since_window = since
            .filter(|(_, start)| start.first <= today)
            .and_then(|(end, start)| Some((end, Some(since_span(start, today)?))));
        let since_not_begun = since.filter(|(_, start)| start.first > today).map(|(end, _)| (end, None));
        let extra = extra.iter().filter_map(|m| m(at, today)).map(|(end, span)| (end, Some(span)));
        let windows = run(MATCHERS_BEFORE_SINCE).chain(since_window).chain(run(MATCHERS_AFTER_SINCE)).chain(extra);
        let not_windows = weekday_no_window(at, today).map(|end| (end, None)).into_iter().chain(since_not_begun);
        for (end, span) in windows.chain(not_windows) {
            if end > start && !glued(&s, start, end) {
                found.push((start, end, span));
            }
        }
    }
    // Of two phrases as long, at the same place, the one that names no window wins.
    found.sort_by_key(|&(start, end, span)| (std::cmp::Reverse(end - start), start, span.is_some()));
    let mut kept: Vec<(usize, usize, Option<Span>)> = Vec::new();
    for f in found {
        if kept.iter().all(|k| f.1 <= k.0 || k.1 <= f.0) {
            kept.push(f);
        }
    }
    kept.sort_by_key(|&(start, ..)| start);
    let mut windows: Vec<Found> = Vec::new();
    for (start, end, span) in kept {
        let Some(span) = span else { continue };
        let f = Found {
            start,
            end,
            first: span.first,
            end_date: span.end_date,
            hours: span.hours,
            period_end: span.period_end,
            ahead: span.ahead,
            grain: span.grain,
            explicit: span.explicit,
        };
        match windows.last_mut() {
            Some(prev) if alternatives(&s, prev, &f) => *prev = prev.joined(&f),
            _ => windows.push(f),
        }
    }
    windows
}

impl Found {
    /// Named dates (2026-11-03, October, week 27) rather than words relative to today.
    pub(crate) fn is_explicit(&self) -> bool {
        self.explicit
    }

    /// The end (exclusive) of the days the phrase names: of its calendar period when that goes
    /// on after today (this month), else of its window.
    pub(crate) fn reach(&self) -> NaiveDate {
        self.period_end.unwrap_or(self.end_date)
    }

    /// Two phrases read as one: from the first's start to the second's end, all their days.
    fn joined(&self, other: &Found) -> Found {
        Found {
            start: self.start,
            end: other.end,
            first: self.first.min(other.first),
            end_date: self.end_date.max(other.end_date),
            hours: None,
            // A period that ended inside the joined days no longer goes on after them.
            period_end: self.period_end.max(other.period_end).filter(|&e| e > self.end_date.max(other.end_date)),
            ahead: self.ahead || other.ahead,
            grain: self.grain.max(other.grain),
            explicit: self.explicit && other.explicit,
        }
    }
}

/// Whether `b`, just after `a`, is an alternative to it or the next of a list (昨天或前天,
/// June and July, 这个月和下个月): only a connector between them, both whole days, and one's
/// days (or the calendar period it names: this month, not only its days up to today) end where
/// the other's begin — so the joined window holds no day neither named (2026-11-03 or yesterday
/// is not joined, nor a narrowing such as "this year, in October": the most specific wins).
fn alternatives(s: &str, a: &Found, b: &Found) -> bool {
    if a.hours.is_some() || b.hours.is_some() || b.start < a.end {
        return false;
    }
    if a.reach() != b.first && b.reach() != a.first {
        return false;
    }
    let mut c = Cur { s, pos: a.end };
    c.ws0();
    if c.longest(CONNECTORS).is_none() {
        return false;
    }
    c.ws0();
    c.pos == b.start
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `s[start..end]` is part of a longer token: a letter or digit touches it, directly or
/// across one of `-/._` (the 2025 in INV-2025-0042).
fn glued(s: &str, start: usize, end: usize) -> bool {
    let ends_in_word = s[..end].chars().next_back().is_some_and(is_word_char);
    starts_glued(s, start) || (ends_in_word && touches(s[end..].chars()))
}

/// Whether a phrase starting at `start` would start inside a longer token (see [`glued`]).
fn starts_glued(s: &str, start: usize) -> bool {
    s[start..].chars().next().is_some_and(is_word_char) && touches(s[..start].chars().rev())
}

/// Whether a letter or digit touches, directly or across one of `-/._`, going `outward`.
fn touches(mut outward: impl Iterator<Item = char>) -> bool {
    match outward.next() {
        Some(c) if is_word_char(c) => true,
        Some('-' | '/' | '.') => outward.next().is_some_and(is_word_char),
        _ => false,
    }
}

/// Whether `phrase` may start where the next character is `next`: most phrases of a table do
/// not start with it. Characters are compared decoded, not as bytes (CJK characters share their
/// first bytes, and a byte-string compare per phrase was most of the scan's time).
fn may_start(phrase: &str, next: Option<char>) -> bool {
    match phrase.chars().next() {
        Some(' ') | None => true,
        first => first == next,
    }
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
        may_start(phrase, self.peek()) && self.phrase_words(phrase)
    }

    /// [`Cur::phrase`] once [`may_start`] has passed.
    fn phrase_words(&mut self, phrase: &str) -> bool {
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
        let next = self.peek();
        let mut best: Option<(Cur<'a>, T)> = None;
        for &(phrase, value) in table {
            if !may_start(phrase, next) {
                continue;
            }
            let mut c = *self;
            if c.phrase_words(phrase) && best.is_none_or(|(b, _)| c.pos > b.pos) {
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

    /// Reads a year written the Chinese way: 2026年, 2026 年, 今年, 去年, 前年, 明年.
    fn year_zh(&mut self, today: NaiveDate) -> Option<i32> {
        let save = *self;
        if let Some(y) = self.year()
            && self.zh_unit("年")
        {
            return Some(y);
        }
        *self = save;
        self.longest(&[("今年", 0), ("去年", 1), ("前年", 2), ("明年", -1)]).map(|back| today.year() - back)
    }

    /// Reads the character after a number (月, 日, 号, 年, 周), spaces before it allowed: 9 月,
    /// 10 月份, 2026 年.
    fn zh_unit(&mut self, unit: &str) -> bool {
        let save = *self;
        self.ws0();
        let ok = self.lit(unit);
        if !ok {
            *self = save;
        }
        ok
    }
}

fn day_span(grain: Grain, explicit: bool, first: NaiveDate, last: NaiveDate) -> Option<Span> {
    Some(Span::days(grain, explicit, first, last.succ_opt()?))
}

fn month_start(year: i32, month: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(year, month, 1)
}

fn year_span(year: i32, explicit: bool) -> Option<Span> {
    Some(Span::days(
        Grain::Year,
        explicit,
        NaiveDate::from_ymd_opt(year, 1, 1)?,
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?,
    ))
}

/// A whole calendar quarter, numbered 1 to 4.
fn quarter_span(year: i32, quarter: u32, explicit: bool) -> Option<Span> {
    let first = month_start(year, quarter * 3 - 2)?;
    Some(Span::days(Grain::Quarter, explicit, first, first.checked_add_months(Months::new(3))?))
}

/// A whole calendar half year, numbered 1 to 2.
fn half_year_span(year: i32, half: u32, explicit: bool) -> Option<Span> {
    let first = month_start(year, half * 6 - 5)?;
    Some(Span::days(Grain::HalfYear, explicit, first, first.checked_add_months(Months::new(6))?))
}

/// The first day of the calendar quarter of `day`.
fn quarter_start(day: NaiveDate) -> Option<NaiveDate> {
    month_start(day.year(), day.month0() / 3 * 3 + 1)
}

/// The Monday that starts the calendar week of `day`.
fn week_start(day: NaiveDate) -> Option<NaiveDate> {
    day.checked_sub_days(Days::new(day.weekday().num_days_from_monday().into()))
}

/// 今天, 昨天, 前天, today, yesterday, the day before yesterday; ahead: 明天, 后天, tomorrow.
fn relative_day(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const DAYS_AHEAD: &[(&str, u64)] = &[
        // Not 明日: 说明日志, 证明日期.
        ("明天", 1),
        ("明早", 1),
        ("明晚", 1),
        ("后天", 2),
        ("大后天", 3),
        ("tomorrow", 1),
        ("day after tomorrow", 2),
        ("the day after tomorrow", 2),
    ];
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
    let mut a = c;
    if let Some(forward) = a.longest(DAYS_AHEAD)
        // 后天 also ends words: 之后天气, 以后天天.
        && !(c.s[..c.pos].ends_with(['之', '以', '然']) && c.rest().starts_with('后'))
    {
        let day = today.checked_add_days(Days::new(forward))?;
        return Some((a.pos, Span::ahead(Grain::Day, false, day, day.succ_opt()?)));
    }
    let back = c.longest(DAYS_BACK)?;
    let day = today.checked_sub_days(Days::new(back))?;
    // "yesterday or the day before", 昨天或前一天: the day before is one more day.
    let mut r = c;
    r.ws0();
    if r.longest(CONNECTORS).is_some() {
        r.ws0();
        if r.longest(&[("the day before", ()), ("the previous day", ()), ("前一天", ())]).is_some() {
            return Some((r.pos, day_span(Grain::Day, false, day.pred_opt()?, day)?));
        }
    }
    Some((c.pos, day_span(Grain::Day, false, day, day)?))
}

/// What joins two time phrases that are alternatives or a list: yesterday or the day before,
/// 昨天和前天, June and July.
const CONNECTORS: &[(&str, ())] = &[
    ("or", ()),
    ("and", ()),
    ("or on", ()),
    ("and on", ()),
    ("or in", ()),
    ("and in", ()),
    (",", ()),
    ("/", ()),
    ("或", ()),
    ("或者", ()),
    ("和", ()),
    ("跟", ()),
    ("与", ()),
    ("及", ()),
    ("还是", ()),
    ("、", ()),
    ("，", ()),
];

#[derive(Debug, Clone, Copy)]
enum Relative {
    /// The calendar week so many weeks before this one; this one (0) up to today.
    WeeksBack(u64),
    ThisMonth,
    LastMonth,
    ThisQuarter,
    LastQuarter,
    ThisYear,
    LastYear,
    YearBeforeLast,
    /// The calendar week so many weeks after this one: 下周, 下下周, next week.
    WeeksAhead(u64),
    NextMonth,
    NextQuarter,
    NextYear,
}

/// Whether the 下 at `c` ends a word rather than meaning "next": 一下 (看一下周报), 以下, 如下, 之下,
/// 底下, 上下.
fn xia_ends_a_word(c: &Cur<'_>) -> bool {
    c.rest().starts_with('下') && c.s[..c.pos].ends_with(['一', '以', '如', '之', '底', '上'])
}

/// 下周, 下下周 and their synonyms: how many calendar weeks after this one.
const WEEKS_AHEAD_ZH: &[(&str, u64)] = &[
    ("下周", 1),
    ("下一周", 1),
    ("下星期", 1),
    ("下个星期", 1),
    ("下礼拜", 1),
    ("下个礼拜", 1),
    ("下下周", 2),
    ("下下星期", 2),
    ("下下个星期", 2),
    ("下下个礼拜", 2),
];

/// 本周, 上个月, 去年, this week, last month: calendar periods named relative to today; ahead:
/// 下周, 下个月, 明年, next week/month/quarter/year, the whole period.
fn calendar_relative(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    use Relative::*;
    const TABLE: &[(&str, Relative)] = &[
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
        ("this week", WeeksBack(0)),
        ("last week", WeeksBack(1)),
        ("previous week", WeeksBack(1)),
        ("prior week", WeeksBack(1)),
        ("the week before last", WeeksBack(2)),
        ("week before last", WeeksBack(2)),
        // To date, as one word: the period so far, as "this month" is ("month to date" and
        // 年初至今 are "since" phrases: see `period_start`).
        ("week-to-date", WeeksBack(0)),
        ("wtd", WeeksBack(0)),
        ("month-to-date", ThisMonth),
        ("mtd", ThisMonth),
        ("quarter-to-date", ThisQuarter),
        ("qtd", ThisQuarter),
        ("year-to-date", ThisYear),
        ("ytd", ThisYear),
        ("this month", ThisMonth),
        ("last month", LastMonth),
        ("previous month", LastMonth),
        ("prior month", LastMonth),
        ("this quarter", ThisQuarter),
        ("last quarter", LastQuarter),
        ("previous quarter", LastQuarter),
        ("prior quarter", LastQuarter),
        ("this year", ThisYear),
        ("last year", LastYear),
        ("previous year", LastYear),
        ("prior year", LastYear),
        ("下月", NextMonth),
        ("下个月", NextMonth),
        ("下一个月", NextMonth),
        ("下季", NextQuarter),
        ("下季度", NextQuarter),
        ("下个季度", NextQuarter),
        ("下一季度", NextQuarter),
        ("明年", NextYear),
        ("下一年", NextYear),
        ("next week", WeeksAhead(1)),
        ("next month", NextMonth),
        ("next quarter", NextQuarter),
        ("next year", NextYear),
    ];
    if xia_ends_a_word(&c) {
        return None;
    }
    let relative = c
        .longest(WEEKS_BACK_ZH)
        .map(WeeksBack)
        .or_else(|| c.longest(WEEKS_AHEAD_ZH).map(WeeksAhead))
        .or_else(|| c.longest(TABLE))?;
    if part_of_a_named_period(c) {
        return None;
    }
    let tomorrow = today.succ_opt()?;
    let monday = week_start(today)?;
    let this_month = month_start(today.year(), today.month())?;
    let this_quarter = quarter_start(today)?;
    let (grain, first, end_date) = match relative {
        WeeksBack(0) => (Grain::Week, monday, tomorrow),
        WeeksBack(n) => {
            let first = monday.checked_sub_days(Days::new(7 * n))?;
            (Grain::Week, first, first.checked_add_days(Days::new(7))?)
        }
        ThisMonth => (Grain::Month, this_month, tomorrow),
        LastMonth => (Grain::Month, this_month.checked_sub_months(Months::new(1))?, this_month),
        ThisQuarter => (Grain::Quarter, this_quarter, tomorrow),
        LastQuarter => (Grain::Quarter, this_quarter.checked_sub_months(Months::new(3))?, this_quarter),
        ThisYear => (Grain::Year, NaiveDate::from_ymd_opt(today.year(), 1, 1)?, tomorrow),
        LastYear => return Some((c.pos, year_span(today.year() - 1, false)?)),
        YearBeforeLast => return Some((c.pos, year_span(today.year() - 2, false)?)),
        WeeksAhead(n) => {
            let first = monday.checked_add_days(Days::new(7 * n))?;
            return Some((c.pos, Span::ahead(Grain::Week, false, first, first.checked_add_days(Days::new(7))?)));
        }
        NextMonth => {
            let first = this_month.checked_add_months(Months::new(1))?;
            return Some((c.pos, Span::ahead(Grain::Month, false, first, first.checked_add_months(Months::new(1))?)));
        }
        NextQuarter => {
            let first = this_quarter.checked_add_months(Months::new(3))?;
            return Some((c.pos, Span::ahead(Grain::Quarter, false, first, first.checked_add_months(Months::new(3))?)));
        }
        NextYear => return Some((c.pos, Span { ahead: true, ..year_span(today.year() + 1, false)? })),
    };
    let period_end = match relative {
        WeeksBack(0) => monday.checked_add_days(Days::new(7)),
        ThisMonth => this_month.checked_add_months(Months::new(1)),
        ThisQuarter => this_quarter.checked_add_months(Months::new(3)),
        ThisYear => NaiveDate::from_ymd_opt(today.year() + 1, 1, 1),
        _ => None,
    }
    .filter(|&end| end > end_date);
    Some((c.pos, Span { period_end, ..Span::days(grain, false, first, end_date) }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weekend {
    /// The last Saturday–Sunday that has begun: this one on a weekend, else the one just past.
    Recent,
    /// This week's, once it has begun.
    This,
    /// The one before this week's: the one just past on a weekday, the week before's on a weekend.
    Last,
    /// Next week's: 下周末, next weekend.
    Next,
}

/// 上周末, 上个周末, 本周末, 这周末, last weekend, this weekend, over the weekend, this past weekend:
/// a Saturday and a Sunday (up to today); ahead: this weekend before it has begun, 下周末, next
/// weekend. A bare 周末 or "weekend" names none: it is as often a kind of day (周末值班补贴, the
/// weekend allowance).
fn weekend(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const TABLE: &[(&str, Weekend)] = &[
        ("上周末", Weekend::Last),
        ("上个周末", Weekend::Last),
        ("上星期末", Weekend::Last),
        ("本周末", Weekend::This),
        ("这周末", Weekend::This),
        ("这个周末", Weekend::This),
        ("last weekend", Weekend::Last),
        ("previous weekend", Weekend::Last),
        ("this weekend", Weekend::This),
        ("this past weekend", Weekend::Recent),
        ("over the weekend", Weekend::Recent),
        ("during the weekend", Weekend::Recent),
        ("下周末", Weekend::Next),
        ("下个周末", Weekend::Next),
        ("下星期末", Weekend::Next),
        ("next weekend", Weekend::Next),
    ];
    if xia_ends_a_word(&c) {
        return None;
    }
    let which = c.longest(TABLE)?;
    let saturday = week_start(today)?.checked_add_days(Days::new(5))?;
    let begun = today >= saturday;
    let coming = match (which, begun) {
        (Weekend::Next, _) => Some(saturday.checked_add_days(Days::new(7))?),
        (Weekend::This, false) => Some(saturday),
        _ => None,
    };
    if let Some(first) = coming {
        return Some((c.pos, Span::ahead(Grain::Day, false, first, first.checked_add_days(Days::new(2))?)));
    }
    let first = match (which, begun) {
        (Weekend::This | Weekend::Recent, true) => saturday,
        _ => saturday.checked_sub_days(Days::new(7))?,
    };
    let last = first.succ_opt()?.min(today);
    Some((c.pos, day_span(Grain::Day, false, first, last)?))
}

/// A third of a month: days 1–10, 11–20, 21 to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Third {
    Early,
    Mid,
    Late,
    FirstHalf,
    SecondHalf,
}

/// Part of a month: early/mid/late June, mid-July 2026, the end of last month, the beginning of
/// this month, the first/second half of October; 6月上旬, 七月中旬, 2026年7月下旬, 7月初, 6月底,
/// 上个月底, 本月初, 10月上半月, and this month's alone: 月初, 月中, 月底, 上半月. Early is days 1–10,
/// mid 11–20, late the 21st to the month's end, a half 1–15 or the 16th to the end; a part of this
/// month ends today, and a part not yet begun gives no window.
fn month_part(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    /// Parts of this month named without a month.
    const BARE_ZH: &[(&str, Third)] = &[
        ("月初", Third::Early),
        ("月中", Third::Mid),
        ("月底", Third::Late),
        ("月末", Third::Late),
        ("上半月", Third::FirstHalf),
        ("下半月", Third::SecondHalf),
    ];
    const EN: &[(&str, Third)] = &[
        ("the first half of", Third::FirstHalf),
        ("first half of", Third::FirstHalf),
        ("the second half of", Third::SecondHalf),
        ("second half of", Third::SecondHalf),
        ("early", Third::Early),
        ("the beginning of", Third::Early),
        ("beginning of", Third::Early),
        ("the start of", Third::Early),
        ("start of", Third::Early),
        ("mid", Third::Mid),
        ("the middle of", Third::Mid),
        ("middle of", Third::Mid),
        ("late", Third::Late),
        ("the end of", Third::Late),
        ("end of", Third::Late),
    ];
    const ZH: &[(&str, Third)] = &[
        ("上半月", Third::FirstHalf),
        ("下半月", Third::SecondHalf),
        ("上旬", Third::Early),
        ("初", Third::Early),
        ("中旬", Third::Mid),
        ("下旬", Third::Late),
        ("底", Third::Late),
        ("末", Third::Late),
    ];
    let (third, month) = if let Some(third) = c.longest(EN) {
        if !c.lit("-") && !c.ws1() {
            return None;
        }
        (third, month_en(&mut c, today)?)
    } else if let Some(third) = c.longest(BARE_ZH) {
        // 月初, 月底, 上半月 alone: this month's; 月底前 is a deadline (`by_end`).
        if c.rest().starts_with(['前', '之', '以', '为']) {
            return None;
        }
        (third, (today.with_day(1)?, false))
    } else {
        let month = month_zh(&mut c, today)?;
        c.ws0();
        (c.longest(ZH)?, month)
    };
    let (first, explicit) = month;
    let month_end = first.checked_add_months(Months::new(1))?;
    let (from, to) = match third {
        Third::Early => (first, first.checked_add_days(Days::new(10))?),
        Third::Mid => (first.checked_add_days(Days::new(10))?, first.checked_add_days(Days::new(20))?),
        Third::Late => (first.checked_add_days(Days::new(20))?, month_end),
        Third::FirstHalf => (first, first.checked_add_days(Days::new(15))?),
        Third::SecondHalf => (first.checked_add_days(Days::new(15))?, month_end),
    };
    if from > today {
        return Some((c.pos, Span::ahead(Grain::Week, explicit, from, to)));
    }
    let to = to.min(today.succ_opt()?);
    Some((c.pos, Span::days(Grain::Week, explicit, from, to)))
}

/// A week by a day in it or by its place in a month: the week of November 9 (Monday to Sunday),
/// the first / second / third / fourth / last week of October (days 1–7, 8–14, 15–21, 22–28, the
/// month's last seven), 10月第一周, 十月的最后一周. A week not yet begun is ahead; this week ends today.
fn week_of(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (from, to) = match week_containing(&mut c, today) {
        Some(days) => days,
        None => {
            let (n, first) = nth_week_en(&mut c, today).or_else(|| nth_week_zh(&mut c, today))?;
            nth_week_days(n, first)?
        }
    };
    if from > today {
        return Some((c.pos, Span::ahead(Grain::Week, true, from, to)));
    }
    Some((c.pos, Span::days(Grain::Week, true, from, to.min(today.succ_opt()?))))
}

/// "the week of November 4": the Monday to Sunday holding that day.
fn week_containing(c: &mut Cur<'_>, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let mut r = *c;
    (r.phrase("the week of") && r.ws1()).then_some(())?;
    let (day, _) = partial(&mut r, today).filter(|p| p.day.is_some())?.span(today)?;
    let monday = day.checked_sub_days(Days::new(u64::from(day.weekday().num_days_from_monday())))?;
    *c = r;
    Some((monday, monday.checked_add_days(Days::new(7))?))
}

/// "(the) first / second / third / fourth / last week of October": which week (5 = the last)
/// and the month's first day.
fn nth_week_en(c: &mut Cur<'_>, today: NaiveDate) -> Option<(u32, NaiveDate)> {
    const NTH: &[(&str, u32)] = &[("first", 1), ("second", 2), ("third", 3), ("fourth", 4), ("last", 5)];
    let mut r = *c;
    let save = r;
    if !(r.phrase("the") && r.ws1()) {
        r = save;
    }
    let n = r.longest(NTH)?;
    (r.ws1() && r.phrase("week of") && r.ws1()).then_some(())?;
    let (first, _) = month_en(&mut r, today)?;
    *c = r;
    Some((n, first))
}

/// The Chinese words for a week after its ordinal: 第一周, 第27个星期.
const WEEK_ZH: &[(&str, ())] = &[("周", ()), ("个星期", ()), ("星期", ()), ("个礼拜", ())];

/// 10月第一周, 十月的最后一周, 11月第三个星期: which week (5 = the last) and the month's first day.
fn nth_week_zh(c: &mut Cur<'_>, today: NaiveDate) -> Option<(u32, NaiveDate)> {
    const NTH: &[(&str, u32)] = &[
        ("第一", 1),
        ("第1", 1),
        ("第二", 2),
        ("第2", 2),
        ("第三", 3),
        ("第3", 3),
        ("第四", 4),
        ("第4", 4),
        ("最后一", 5),
    ];
    let mut r = *c;
    let (first, _) = month_zh(&mut r, today)?;
    r.lit("的");
    let n = r.longest(NTH)?;
    r.longest(WEEK_ZH)?;
    *c = r;
    Some((n, first))
}

/// The days of week `n` of the month starting `first`: 1–7, 8–14, 15–21, 22–28, or (5) its last seven.
fn nth_week_days(n: u32, first: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let month_end = first.checked_add_months(Months::new(1))?;
    if n == 5 {
        return Some((month_end.checked_sub_days(Days::new(7))?, month_end));
    }
    let from = first.checked_add_days(Days::new(u64::from(n - 1) * 7))?;
    Some((from, from.checked_add_days(Days::new(7))?))
}

/// An ISO week by its number, as documents name it: "week 27", "wk 27", "CW27", "KW 27", "week
/// 27, 2026", "2026-W27", 第27周, 2026年第27周. Without a year, the week of that number nearest
/// `today`. Questions are not read this way: a question's "week 1" is as often a course's.
fn week_number(c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (end, year, n) = week_by_word(c).or_else(|| week_iso(c)).or_else(|| week_zh(c, today))?;
    let monday = match year {
        Some(y) => NaiveDate::from_isoywd_opt(y, n, Weekday::Mon)?,
        // Without a year, the nearest such week, if it is within half a year: "week 53" written
        // in a year that has none names no week.
        None => [today.year() - 1, today.year(), today.year() + 1]
            .into_iter()
            .filter_map(|y| NaiveDate::from_isoywd_opt(y, n, Weekday::Mon))
            .min_by_key(|m| (*m - today).num_days().abs())
            .filter(|m| (*m - today).num_days().abs() <= 26 * 7)?,
    };
    Some((end, Span::days(Grain::Week, true, monday, monday.checked_add_days(Days::new(7))?)))
}

/// "week 27", "wk27", "cw 27", "kw27", with a year after it (" 2026", ", 2026") or before it
/// ("2026 week 27").
fn week_by_word(mut c: Cur<'_>) -> Option<(usize, Option<i32>, u32)> {
    let before = {
        let mut r = c;
        r.year().filter(|_| r.ws1()).inspect(|_| c = r)
    };
    ["week", "wk", "cw", "kw"].iter().any(|w| c.lit(w)).then_some(())?;
    c.ws0();
    let n = c.small().filter(|n| (1..=53).contains(n))?;
    if c.peek().is_some_and(is_word_char) {
        return None;
    }
    let after = c.year_tail();
    Some((c.pos, before.or(after), n))
}

/// "2026-W27", "2026W27".
fn week_iso(mut c: Cur<'_>) -> Option<(usize, Option<i32>, u32)> {
    let year = c.year()?;
    c.lit("-");
    c.lit("w").then_some(())?;
    let (n, len) = c.digits()?;
    (len == 2 && (1..=53).contains(&n)).then_some((c.pos, Some(year), n))
}

/// 第27周, 第 27 周, 2026年第27周 (also 第27个星期).
fn week_zh(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Option<i32>, u32)> {
    let year = {
        let mut r = c;
        r.year_zh(today).inspect(|_| c = r)
    };
    // 每月第2周 is a week of every month, not of the year.
    if c.s[..c.pos].ends_with('月') {
        return None;
    }
    c.lit("第").then_some(())?;
    c.ws0();
    let n = c.small().filter(|n| (1..=53).contains(n))?;
    c.ws0();
    c.longest(WEEK_ZH)?;
    // 第10周年 is an anniversary, 第2周期 a cycle, 第3周岁 an age.
    if c.peek().is_some_and(|n| "年期岁".contains(n)) {
        return None;
    }
    Some((c.pos, year, n))
}

/// When a holiday falls: on fixed days of the Gregorian year, or on the days a table lists.
#[derive(Clone, Copy)]
enum Holiday {
    /// Month, day and length in days.
    Fixed(u32, u32, u64),
    /// Its first day in each year of the table, and its length in days.
    Listed(&'static [(i32, u32, u32)], u64),
}

/// 春节: from New Year's Eve (除夕), eight days; 2024–2028.
const SPRING_FESTIVAL: &[(i32, u32, u32)] = &[(2024, 2, 9), (2025, 1, 28), (2026, 2, 16), (2027, 2, 5), (2028, 1, 25)];
/// 中秋节, its three days off; 2024–2028.
const MID_AUTUMN: &[(i32, u32, u32)] = &[(2024, 9, 15), (2025, 10, 6), (2026, 9, 25), (2027, 9, 15), (2028, 10, 3)];
/// 端午节, its three days off; 2024–2028.
const DRAGON_BOAT: &[(i32, u32, u32)] = &[(2024, 6, 8), (2025, 5, 31), (2026, 6, 19), (2027, 6, 9), (2028, 5, 28)];

/// Holidays by name, longest names first where one starts another.
const HOLIDAYS: &[(&str, Holiday)] = &[
    ("国庆节", Holiday::Fixed(10, 1, 7)),
    ("国庆", Holiday::Fixed(10, 1, 7)),
    ("十一假期", Holiday::Fixed(10, 1, 7)),
    ("十一长假", Holiday::Fixed(10, 1, 7)),
    ("十一黄金周", Holiday::Fixed(10, 1, 7)),
    ("national day holiday", Holiday::Fixed(10, 1, 7)),
    ("五一假期", Holiday::Fixed(5, 1, 5)),
    ("五一劳动节", Holiday::Fixed(5, 1, 5)),
    ("五一", Holiday::Fixed(5, 1, 5)),
    ("劳动节", Holiday::Fixed(5, 1, 5)),
    ("元旦", Holiday::Fixed(1, 1, 1)),
    ("new year's day", Holiday::Fixed(1, 1, 1)),
    ("双十一", Holiday::Fixed(11, 11, 1)),
    ("双11", Holiday::Fixed(11, 11, 1)),
    ("singles' day", Holiday::Fixed(11, 11, 1)),
    ("singles day", Holiday::Fixed(11, 11, 1)),
    ("double 11", Holiday::Fixed(11, 11, 1)),
    ("圣诞节", Holiday::Fixed(12, 25, 1)),
    ("christmas day", Holiday::Fixed(12, 25, 1)),
    ("christmas", Holiday::Fixed(12, 25, 1)),
    ("春节", Holiday::Listed(SPRING_FESTIVAL, 8)),
    ("过年", Holiday::Listed(SPRING_FESTIVAL, 8)),
    ("chinese new year", Holiday::Listed(SPRING_FESTIVAL, 8)),
    ("lunar new year", Holiday::Listed(SPRING_FESTIVAL, 8)),
    ("spring festival", Holiday::Listed(SPRING_FESTIVAL, 8)),
    ("中秋节", Holiday::Listed(MID_AUTUMN, 3)),
    ("中秋", Holiday::Listed(MID_AUTUMN, 3)),
    ("mid-autumn festival", Holiday::Listed(MID_AUTUMN, 3)),
    ("端午节", Holiday::Listed(DRAGON_BOAT, 3)),
    ("端午", Holiday::Listed(DRAGON_BOAT, 3)),
    ("dragon boat festival", Holiday::Listed(DRAGON_BOAT, 3)),
];

/// How far ahead a holiday is still "the coming one" (国庆期间 asked in September).
const HOLIDAY_AHEAD_DAYS: u64 = 60;
/// The days before (节前) or after (节后) a holiday that a phrase names.
const HOLIDAY_SIDE_DAYS: u64 = 7;

impl Holiday {
    /// Its first day and the day after its last in `year`, if known.
    fn days_in(self, year: i32) -> Option<(NaiveDate, NaiveDate)> {
        let (first, len) = match self {
            Holiday::Fixed(m, d, len) => (NaiveDate::from_ymd_opt(year, m, d)?, len),
            Holiday::Listed(table, len) => {
                let &(_, m, d) = table.iter().find(|(y, _, _)| *y == year)?;
                (NaiveDate::from_ymd_opt(year, m, d)?, len)
            }
        };
        Some((first, first.checked_add_days(Days::new(len))?))
    }
}

/// A holiday, its days or the week before or after it: 国庆期间, 国庆节前, 春节后, 五一假期, 双十一,
/// Chinese New Year, Christmas. The coming one when it begins within [`HOLIDAY_AHEAD_DAYS`], else
/// the last one that has begun (a holiday of a year outside its table names no window).
fn holiday(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let day = c.longest(HOLIDAYS)?;
    let horizon = today.checked_add_days(Days::new(HOLIDAY_AHEAD_DAYS))?;
    let (first, end) = [today.year() + 1, today.year(), today.year() - 1]
        .into_iter()
        .filter_map(|y| day.days_in(y))
        .find(|(first, _)| *first <= horizon)?;
    let side = Days::new(HOLIDAY_SIDE_DAYS);
    let (from, to) = match c.longest(&[
        ("前", true),
        ("之前", true),
        ("以前", true),
        ("后", false),
        ("之后", false),
        ("以后", false),
    ]) {
        Some(true) => (first.checked_sub_days(side)?, first),
        Some(false) => (end, end.checked_add_days(side)?),
        None => {
            // 期间, 假期, 放假: the holiday itself.
            c.longest(&[("期间", ()), ("假期", ()), ("长假", ()), ("放假", ())]);
            (first, end)
        }
    };
    if from > today {
        return Some((c.pos, Span::ahead(Grain::Week, true, from, to)));
    }
    Some((c.pos, Span::days(Grain::Week, true, from, to.min(today.succ_opt()?))))
}

/// The month after "early", "mid", "the end of": June, July 2026, Oct, this month, last month,
/// next month. Returns its first day and whether it is named.
fn month_en(c: &mut Cur<'_>, today: NaiveDate) -> Option<(NaiveDate, bool)> {
    let mut r = *c;
    if let Some((month, _)) = month_name(&mut r) {
        let p = Partial { year: r.year_tail(), month: Some(month), day: None };
        let (first, _) = p.span(today)?;
        *c = r;
        return Some((first, true));
    }
    relative_month(c, today)
}

/// The month before 上旬, 初, 底: 6月, 七月, 2026年7月, 上个月, 本月, 下个月.
fn month_zh(c: &mut Cur<'_>, today: NaiveDate) -> Option<(NaiveDate, bool)> {
    let mut r = *c;
    if let Some(p @ Partial { month: Some(_), day: None, .. }) = chinese(&mut r, today) {
        let (first, _) = p.span(today)?;
        *c = r;
        return Some((first, true));
    }
    relative_month(c, today)
}

/// This month, last month or next month, as [`calendar_relative`] reads them.
fn relative_month(c: &mut Cur<'_>, today: NaiveDate) -> Option<(NaiveDate, bool)> {
    let (end, span) = calendar_relative(*c, today)?;
    (span.grain == Grain::Month).then_some(())?;
    c.pos = end;
    Some((span.first, false))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    HalfYear,
    Year,
}

/// 最近三天, 近两周, 过去一个月, 最近半年, last 7 days, the past 2 weeks, past month: the period
/// ending today. 过去24小时, past 24 hours: the hours before the question.
///
/// Ahead (未来30天, 接下来两周, the next 30 days, in the coming 2 weeks): today and the period
/// after it (30 days: today and the 30 days after); hours from the question on.
fn rolling(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (n, unit, ahead) = rolling_zh(&mut c).or_else(|| rolling_en(&mut c))?;
    let tomorrow = today.succ_opt()?;
    // Days and months from today, back or ahead.
    let days = |d: u64| if ahead { today.checked_add_days(Days::new(d)) } else { today.checked_sub_days(Days::new(d)) };
    let months = |m: u32| {
        if ahead { today.checked_add_months(Months::new(m)) } else { today.checked_sub_months(Months::new(m)) }
    };
    let (grain, other_end) = match unit {
        Unit::Hour => {
            let span = Span { hours: Some(n), ahead, ..Span::days(Grain::Hour, false, today, tomorrow) };
            return Some((c.pos, span));
        }
        Unit::Day => (Grain::Day, days(u64::from(n))?),
        Unit::Week => (Grain::Week, days(7 * u64::from(n))?),
        Unit::Month => (Grain::Month, months(n)?),
        Unit::Quarter => (Grain::Quarter, months(n.checked_mul(3)?)?),
        Unit::HalfYear => (Grain::Month, months(n.checked_mul(6)?)?),
        Unit::Year => (Grain::Year, months(n.checked_mul(12)?)?),
    };
    if ahead {
        return Some((c.pos, Span::ahead(grain, false, today, other_end.succ_opt()?)));
    }
    Some((c.pos, Span::days(grain, false, other_end.succ_opt()?, tomorrow)))
}

/// "A few days" back — 前几天, 前些天, 最近几天, 近几天, 过去几天, 几天前, the past few days, a few
/// days ago, the other day: the week up to today (today and the 6 days before), as people say it of
/// two to six days back. 前几天 after a word is "a few days before" it (到期前几天提醒): no window.
fn few_days(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const PHRASES: &[(&str, bool)] = &[
        ("前几天", true),
        ("前些天", true),
        ("前两天", true),
        ("前些日子", true),
        ("最近几天", false),
        ("最近这几天", false),
        ("近几天", false),
        ("过去几天", false),
        ("过去的几天", false),
        ("几天前", false),
        ("几天之前", false),
        ("the past few days", false),
        ("the last few days", false),
        ("the past couple of days", false),
        ("the last couple of days", false),
        ("a few days ago", false),
        ("a couple of days ago", false),
        ("the other day", false),
        ("in recent days", false),
    ];
    /// What may stand before 前几天 when it means "a few days ago": a subject, a verb of saying,
    /// an adverb (我前几天, 客户说前几天, 就在前几天). Not 的 (合同到期的前几天: before it) nor a
    /// letter or digit (ETA前两天).
    const BEFORE_QIAN: &str = "我你他她它们有在就是说都也还那这从于到，。、；：！？ 　\n";
    let before = c.s[..c.pos].chars().next_back();
    let qian = c.longest(PHRASES)?;
    if qian && before.is_some_and(|b| b.is_ascii_alphanumeric() || (!b.is_ascii() && !BEFORE_QIAN.contains(b))) {
        return None;
    }
    // 十几天前, 二十几天前: more than ten days.
    if before.is_some_and(|b| b.is_ascii_digit() || "十百两一二三四五六七八九".contains(b)) {
        return None;
    }
    // "the last few days of October" names part of another period.
    if part_of_a_named_period(c) {
        return None;
    }
    Some((c.pos, Span::days(Grain::Day, false, today.checked_sub_days(Days::new(6))?, today.succ_opt()?)))
}

/// How many "a few" weeks or months are (最近几周, the past few weeks).
const FEW: u32 = 3;

/// 最近三天, 近两周, 过去的一个月, 最近7天内, 近半年, 过去24小时: a count and its unit; ahead
/// (未来30天, 接下来两周, 今后一个月, 往后7天).
fn rolling_zh(c: &mut Cur<'_>) -> Option<(u32, Unit, bool)> {
    const UNITS: &[(&str, Unit)] = &[
        ("小时", Unit::Hour),
        ("个小时", Unit::Hour),
        ("钟头", Unit::Hour),
        ("个钟头", Unit::Hour),
        ("h", Unit::Hour),
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
    let ahead = r.longest(&[
        ("最近", false),
        ("近", false),
        ("近来", false),
        ("过去", false),
        ("未来", true),
        ("接下来", true),
        ("今后", true),
        ("往后", true),
    ])?;
    r.lit("的");
    r.ws0();
    let (n, unit) = if r.lit("半年") {
        (1, Unit::HalfYear)
    } else if r.lit("几") {
        // 最近几周, 近几个月: three; a few days is `few_days`'s week.
        (FEW, r.longest(UNITS).filter(|&u| u == Unit::Week || u == Unit::Month)?)
    } else {
        let n = r.count_zh().filter(|&n| n > 0)?;
        r.ws0();
        (n, r.longest(UNITS)?)
    };
    r.longest(&[("内", ()), ("以内", ()), ("以来", ()), ("里", ())]);
    *c = r;
    Some((n, unit, ahead))
}

/// the last 7 days, past 2 weeks, previous 5 days, the past week, the last 24 hours, past 24h, the
/// past half year: a count (one when left out) and its unit; ahead: the next 30 days, in the
/// coming 2 weeks, over the next month, the coming week, upcoming 7 days.
fn rolling_en(c: &mut Cur<'_>) -> Option<(u32, Unit, bool)> {
    const UNITS: &[(&str, Unit)] = &[
        ("hour", Unit::Hour),
        ("day", Unit::Day),
        ("week", Unit::Week),
        ("month", Unit::Month),
        ("quarter", Unit::Quarter),
        ("half year", Unit::HalfYear),
        ("half a year", Unit::HalfYear),
        ("half-year", Unit::HalfYear),
        ("year", Unit::Year),
        ("hours", Unit::Hour),
        ("hrs", Unit::Hour),
        ("hr", Unit::Hour),
        ("h", Unit::Hour),
        ("days", Unit::Day),
        ("weeks", Unit::Week),
        ("months", Unit::Month),
        ("quarters", Unit::Quarter),
        ("years", Unit::Year),
    ];
    /// Whether the word stands for a rolling period without a count ("past week", "the coming
    /// week"; "last week" and "next week" are calendar weeks) and whether it looks ahead.
    const LEADS: &[(&str, (bool, bool))] = &[
        ("past", (true, false)),
        ("last", (false, false)),
        ("previous", (false, false)),
        ("next", (false, true)),
        ("coming", (true, true)),
        ("upcoming", (true, true)),
        ("in the next", (false, true)),
        ("in the coming", (true, true)),
        ("over the next", (false, true)),
        ("over the coming", (true, true)),
        ("within the next", (false, true)),
        ("within the coming", (true, true)),
        ("for the next", (false, true)),
        ("during the next", (false, true)),
    ];
    let mut r = *c;
    let the = r.phrase("the");
    if the && !r.ws1() {
        return None;
    }
    let last = the && { r }.phrase("last");
    let (alone, ahead) = r.longest(LEADS)?;
    // "the last week" (in the last week, over the last month) is the period up to today, as
    // "the past week" is; only a bare "last week" names the calendar week.
    let alone = alone || last;
    if !r.ws1() {
        return None;
    }
    let mut counted = r;
    // "the past few weeks", "the last couple of months": three and two; a few days is
    // `few_days`'s week.
    let few = counted.longest(&[("few", FEW), ("couple of", 2), ("couple", 2)]);
    if let Some(n) = few {
        let unit = (counted.ws1().then_some(()))
            .and_then(|()| counted.longest(&UNITS[9..]))
            .filter(|&u| u == Unit::Week || u == Unit::Month)?;
        if part_of_a_named_period(counted) {
            return None;
        }
        *c = counted;
        return Some((n, unit, ahead));
    }
    if let Some(n) = counted.count_en().filter(|&n| n > 0) {
        let spaced = counted.ws1();
        // Hours may be glued to their count: 24h, 48hrs.
        if let Some(unit) = counted.longest(UNITS).filter(|&unit| spaced || unit == Unit::Hour) {
            *c = counted;
            return Some((n, unit, ahead));
        }
    }
    // "past week" is rolling; "last week" is the calendar week, read by calendar_relative. An hour
    // has no calendar reading: "the last hour" is the past hour. Only the singular units (the
    // first nine) stand without a count.
    let unit = r.longest(&UNITS[..9]).filter(|&unit| alone || unit == Unit::Hour)?;
    if part_of_a_named_period(r) {
        return None;
    }
    *c = r;
    Some((1, unit, ahead))
}

/// Whether "of" follows: "the last week of October", "last month of the year" name a part of
/// another period, not the week or month up to today (that period is read on its own).
fn part_of_a_named_period(mut after: Cur<'_>) -> bool {
    after.ws1() && after.phrase("of")
}

/// How many months after this one a month named without a year is read as the coming one
/// (November asked on 20 October is November this year); a month further ahead is the most recent
/// one that has begun (December asked in September is last December).
const MONTHS_AHEAD: u32 = 2;

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
    /// begun by `today`, but a month of the next [`MONTHS_AHEAD`] is the coming one.
    fn span(self, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
        match self {
            Partial { year: Some(y), month: None, day: None } => {
                let span = year_span(y, true)?;
                Some((span.first, span.end_date))
            }
            Partial { year, month: Some(m), day: None } => {
                // One of the next MONTHS_AHEAD months is the coming one (8月份开船 asked in July).
                let ahead = (m + 12 - today.month()) % 12;
                let coming = (1..=MONTHS_AHEAD).contains(&ahead);
                let y = year.unwrap_or(match (coming, m <= today.month()) {
                    (true, true) => today.year() + 1,
                    (true, false) | (false, true) => today.year(),
                    (false, false) => today.year() - 1,
                });
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
        && m.zh_unit("月")
    {
        p.month = Some(month);
        r = m;
        let mut d = r;
        d.ws0();
        if let Some(day) = d.ordinal_zh().filter(|d| (1..=31).contains(d))
            && (d.zh_unit("日") || d.zh_unit("号"))
        {
            p.day = Some(day);
            r = d;
        } else {
            r.zh_unit("份");
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

/// October, Oct 2026, October, 2026, Nov 3, November 3rd, November 3, 2026; with its year told
/// by a word before it: this November (this year's), next November, the coming November (the
/// first after this month).
fn month_first(c: &mut Cur<'_>, today: NaiveDate) -> Option<Partial> {
    const LEADS: &[(&str, bool)] =
        &[("this", false), ("next", true), ("coming", true), ("this coming", true), ("the coming", true)];
    let mut r = *c;
    let mut lead = None;
    let mut led = r;
    if let Some(next) = led.longest(LEADS)
        && led.ws1()
    {
        lead = Some(next);
        r = led;
    }
    let (month, alone) = month_name(&mut r)?;
    let alone = alone || lead.is_some();
    let mut p = Partial { month: Some(month), ..Partial::default() };
    if let Some(next) = lead {
        p.year = Some(if next && month <= today.month() { today.year() + 1 } else { today.year() });
    }
    let mut d = r;
    if d.ws1()
        && let Some(day) = d.day_en()
    {
        p.day = Some(day);
        r = d;
    }
    if lead.is_none() {
        p.year = r.year_tail();
    }
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
    if let Some((first, end_date)) = day_before_range(&mut c, between == Some(true), today) {
        return Some((c.pos, Span::days(Grain::Day, true, first, end_date)));
    }
    let start = partial(&mut c, today)?;
    let (first, end_date) = start.span(today)?;
    if let Some((end_date, end_grain)) = range_end(&mut c, start, first, between == Some(true), today) {
        return Some((c.pos, Span::days(start.grain().min(end_grain), true, first, end_date)));
    }
    // "from" and "between" belong to a range; the date alone is read from its own position.
    if between.is_some() {
        return None;
    }
    Some((c.pos, Span::days(start.grain(), true, first, end_date)))
}

/// What joins the two ends of a range (" to ", "-", 至); "and" after "between" is read apart.
const RANGE_TO: &[(&str, ())] = &[
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

/// A range whose first day is a bare day of the month the end names: "5 to 12 October", "between
/// 5 and 12 October", "5-12 Oct 2026": its first day and the day after its last.
fn day_before_range(c: &mut Cur<'_>, between: bool, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let mut r = *c;
    let day = r.day_en()?;
    r.ws0();
    if between { r.phrase("and") } else { r.longest(RANGE_TO).is_some() }.then_some(())?;
    r.ws0();
    let end = partial(&mut r, today)?;
    let (Some(month), Some(_)) = (end.month, end.day) else { return None };
    let (last, end_date) = end.span(today)?;
    let first = NaiveDate::from_ymd_opt(last.year(), month, day)?;
    (first < last).then_some(())?;
    *c = r;
    Some((first, end_date))
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
    let mut r = *c;
    r.ws0();
    if between { r.phrase("and") } else { r.longest(RANGE_TO).is_some() }.then_some(())?;
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
    let (year, q) = with_year(&mut c, today, quarter_number)?;
    let year = year.unwrap_or(if q * 3 - 2 <= today.month() { today.year() } else { today.year() - 1 });
    Some((c.pos, quarter_span(year, q, true)?))
}

/// Reads a part of a year (Q3, 第三季度, H1, 上半年) with its year, when written, before it (2026 Q3,
/// 2026-Q3, 2026年第三季度, 去年上半年) or after it (Q3 2026, Q3-2026, H1 of 2026).
fn with_year<'a, T>(
    c: &mut Cur<'a>,
    today: NaiveDate,
    part: impl FnOnce(&mut Cur<'a>) -> Option<T>,
) -> Option<(Option<i32>, T)> {
    let mut r = *c;
    let mut year = r.year_zh(today).or_else(|| {
        let y = r.year()?;
        if !r.ws1() {
            r.lit("-");
        }
        Some(y)
    });
    if year.is_some() {
        r.ws0();
    } else {
        r = *c;
    }
    let value = part(&mut r)?;
    if year.is_none() {
        year = r.year_tail();
        let mut dashed = r;
        if year.is_none()
            && dashed.lit("-")
            && let Some(y) = dashed.year()
        {
            year = Some(y);
            r = dashed;
        }
    }
    *c = r;
    Some((year, value))
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

/// 上半年, 2026年下半年, 去年上半年, H1 2026, 2026 H2, 2026-H1, first half of 2026, second half of
/// last year. Without a year, 上半年 and 下半年 are of this year; 下半年 before July gives nothing.
/// H1 and H2 need a year: alone they are headings and hydrogen more often than half years.
fn half_year(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (year, (half, zh)) = with_year(&mut c, today, |r| {
        r.longest(&[("上半年", 1), ("下半年", 2)]).map(|h| (h, true)).or_else(|| half_number(r).map(|h| (h, false)))
    })?;
    let year = match year {
        Some(y) => y,
        None if zh && half == 2 && today.month() < 7 => return None,
        None if zh => today.year(),
        None => {
            // first half of this year, H2 of last year.
            let mut of = c;
            of.ws1().then_some(())?;
            (of.phrase("of") && of.ws1()).then_some(())?;
            let back = of.longest(&[("this year", 0), ("last year", 1), ("the year", 0)])?;
            c = of;
            today.year() - back
        }
    };
    Some((c.pos, half_year_span(year, half, true)?))
}

/// h1, h2, first half, second half.
fn half_number(c: &mut Cur<'_>) -> Option<u32> {
    let mut h = *c;
    if h.lit("h")
        && let Some((n @ 1..=2, 1)) = h.digits()
    {
        *c = h;
        return Some(n);
    }
    c.longest(&[("first half", 1), ("1st half", 1), ("second half", 2), ("2nd half", 2)])
}

/// Which week a weekday is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WeekOf {
    /// The most recent one that has begun, today included: 周五, Friday.
    Recent,
    /// The most recent one before today: last Friday.
    BeforeToday,
    /// In the calendar week so many weeks before this one (0: this week): 本周五, 上周五.
    WeeksBack(u64),
    /// In the calendar week so many weeks after this one: 下周五, next Friday.
    WeeksAhead(u64),
    /// The first one after today: this coming Friday.
    Coming,
}

/// A weekday as written, or a few days from one (上周一到周三, 上周五到周一): `first` to `last`.
#[derive(Debug, Clone, Copy)]
struct Weekdays {
    week: WeekOf,
    first: Weekday,
    last: Weekday,
}

impl Weekdays {
    /// The first and the last day. A range that has begun ends today at the latest; a day of
    /// this week not yet begun (本周五 on a Wednesday), of a week to come (下周五) or the coming
    /// one is ahead, and so is the range from it.
    fn dates(self, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
        let offset = |d: Weekday| u64::from(d.num_days_from_monday());
        let back = (offset(today.weekday()) + 7 - offset(self.first)) % 7;
        let day_of = |monday: NaiveDate| monday.checked_add_days(Days::new(offset(self.first)));
        let first = match self.week {
            WeekOf::Recent => today.checked_sub_days(Days::new(back))?,
            WeekOf::BeforeToday => today.checked_sub_days(Days::new(if back == 0 { 7 } else { back }))?,
            WeekOf::WeeksBack(n) => day_of(week_start(today)?.checked_sub_days(Days::new(7 * n))?)?,
            WeekOf::WeeksAhead(n) => day_of(week_start(today)?.checked_add_days(Days::new(7 * n))?)?,
            WeekOf::Coming => today.checked_add_days(Days::new(if back == 0 { 7 } else { 7 - back }))?,
        };
        // 上周五到周一 runs into the next week.
        let length = (offset(self.last) + 7 - offset(self.first)) % 7;
        let last = first.checked_add_days(Days::new(length))?;
        Some((first, if first <= today { last.min(today) } else { last }))
    }
}

const WEEK_WORDS_ZH: &[(&str, ())] = &[("周", ()), ("星期", ()), ("礼拜", ())];

/// 本周, 上周, 上上周 and their synonyms: how many calendar weeks before this one.
const WEEKS_BACK_ZH: &[(&str, u64)] = &[
    ("本周", 0),
    ("这周", 0),
    ("这一周", 0),
    ("本星期", 0),
    ("这星期", 0),
    ("这个星期", 0),
    ("本礼拜", 0),
    ("这礼拜", 0),
    ("这个礼拜", 0),
    ("上周", 1),
    ("上一周", 1),
    ("上星期", 1),
    ("上个星期", 1),
    ("上礼拜", 1),
    ("上个礼拜", 1),
    ("上上周", 2),
    ("上上星期", 2),
    ("上上个星期", 2),
    ("上上礼拜", 2),
    ("上上个礼拜", 2),
];

/// Reads a weekday phrase: 周五, 星期天, 上周五, 上个星期五, 这周三, 本周的周三, 上周一到周三, Friday,
/// last Friday, this Monday.
fn weekdays(c: &mut Cur<'_>) -> Option<Weekdays> {
    weekdays_zh(c).or_else(|| weekdays_en(c))
}

fn weekdays_zh(c: &mut Cur<'_>) -> Option<Weekdays> {
    // 周 after these is a count of weeks (两周三次, 每周一), or the week is named before it
    // (下周一, 这个星期五: read with its week, or not at all).
    const NOT_AFTER: &str = "每下个几两半数零一二三四五六七八九十百上本这该隔逢0123456789";
    if xia_ends_a_word(c) {
        return None;
    }
    let mut r = *c;
    let named_week = r.longest(WEEKS_BACK_ZH).map(WeekOf::WeeksBack);
    let named_week = named_week.or_else(|| r.longest(WEEKS_AHEAD_ZH).map(WeekOf::WeeksAhead));
    let week = match named_week {
        Some(week) => {
            // 上周五, and also 上周的周五, 上周星期五.
            let mut named = r;
            named.lit("的");
            // `{ named }` tries the day on a copy: it is read again below.
            if named.longest(WEEK_WORDS_ZH).is_some() && day_zh(&mut { named }).is_some() {
                r = named;
            }
            week
        }
        None => {
            if r.s[..r.pos].chars().next_back().is_some_and(|p| NOT_AFTER.contains(p)) {
                return None;
            }
            r.longest(WEEK_WORDS_ZH)?;
            WeekOf::Recent
        }
    };
    let first = day_zh(&mut r)?;
    let mut last = first;
    // 上周一到周三: a few days from a day of a named week; 上周五到周一 ends in the week after.
    let mut to = r;
    to.ws0();
    if week != WeekOf::Recent
        && to.longest(&[("到", ()), ("至", ()), ("-", ()), ("–", ()), ("~", ()), ("～", ())]).is_some()
    {
        to.ws0();
        to.longest(WEEK_WORDS_ZH);
        if let Some(end) = day_zh(&mut to).filter(|&end| end != first) {
            last = end;
            r = to;
        }
    }
    *c = r;
    Some(Weekdays { week, first, last })
}

/// Reads the character that names the day after 周, 星期 or 礼拜, unless it starts a word of its
/// own: 一共 in 上周一共, 三次 in 两周三次, 五个 in 本周五个订单, 日志 in 本周日志, 天气 in 这周天气.
fn day_zh(c: &mut Cur<'_>) -> Option<Weekday> {
    const WORD_AFTER: &str =
        "次回遍趟共样直般定些点切个半同致再旦位名项单笔条件批份张台周天月年季小时分秒百千万十零两前后之";
    let mut chars = c.rest().chars();
    let ch = chars.next()?;
    let day = match ch {
        '一' => Weekday::Mon,
        '二' => Weekday::Tue,
        '三' => Weekday::Wed,
        '四' => Weekday::Thu,
        '五' => Weekday::Fri,
        '六' => Weekday::Sat,
        '日' | '天' => Weekday::Sun,
        _ => return None,
    };
    let own_word = match ch {
        '日' => "志报记常程均历期用子",
        '天' => "气数",
        _ => "",
    };
    let after = &c.rest()[ch.len_utf8()..];
    // 周五前, 上周五之前: the day, before which (read by weekday_no_window and before).
    let qian = after.strip_prefix('之').unwrap_or(after);
    let before = qian.starts_with('前') && !starts_word_with_qian(qian);
    if !before && chars.next().is_some_and(|next| WORD_AFTER.contains(next) || own_word.contains(next)) {
        return None;
    }
    c.pos += ch.len_utf8();
    Some(day)
}

const WEEKDAYS_EN: &[(&str, Weekday)] = &[
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

/// Friday, last Friday, previous Friday, this past Friday, this Friday. Only full names: "sun",
/// "sat" and "wed" are words too. A plural (Mondays) is a habit, not a day, and is not read.
fn weekdays_en(c: &mut Cur<'_>) -> Option<Weekdays> {
    const WEEK: &[(&str, WeekOf)] = &[
        ("last", WeekOf::BeforeToday),
        ("previous", WeekOf::BeforeToday),
        ("this past", WeekOf::BeforeToday),
        ("this", WeekOf::WeeksBack(0)),
        ("next", WeekOf::WeeksAhead(1)),
        ("coming", WeekOf::Coming),
        ("this coming", WeekOf::Coming),
    ];
    let mut r = *c;
    let mut week = WeekOf::Recent;
    let mut named = r;
    if let Some(w) = named.longest(WEEK)
        && named.ws1()
    {
        week = w;
        r = named;
    }
    let day = r.longest(WEEKDAYS_EN)?;
    *c = r;
    Some(Weekdays { week, first: day, last: day })
}

/// 周五, 上周五, 本周一到周三, last Friday, this Monday: whole local days of one week; ahead: 下周五,
/// next Friday, this coming Monday, 本周五 or "this Friday" before that Friday.
fn weekday(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (first, last) = weekdays(&mut c)?.dates(today)?;
    let span = day_span(Grain::Day, false, first, last)?;
    Some((c.pos, Span { ahead: first > today, ..span }))
}

/// Weekdays that name no window: a schedule (周一至周五, Monday to Friday), a habit (每周一, every
/// Monday), a day to come (next Friday, by Friday) or a holiday (Black Friday, 黑色星期五).
fn weekday_no_window(c: Cur<'_>, _today: NaiveDate) -> Option<usize> {
    const TO_ZH: &[(&str, ())] = &[("到", ()), ("至", ()), ("-", ()), ("–", ()), ("—", ()), ("~", ()), ("～", ())];
    const TO_EN: &[(&str, ())] =
        &[("to", ()), ("through", ()), ("thru", ()), ("until", ()), ("till", ()), ("-", ()), ("–", ()), ("—", ())];
    const BEFORE_EN: &[(&str, ())] =
        &[("every", ()), ("each", ()), ("by", ()), ("until", ()), ("till", ()), ("before", ())];
    const HOLIDAYS: &[(&str, ())] = &[
        ("black friday", ()),
        ("cyber monday", ()),
        ("good friday", ()),
        ("easter sunday", ()),
        ("easter monday", ()),
        ("palm sunday", ()),
        ("ash wednesday", ()),
        ("黑色星期五", ()),
    ];
    let zh_day = |c: &mut Cur<'_>| c.longest(WEEK_WORDS_ZH).is_some() && day_zh(c).is_some();
    let mut r = c;
    if r.longest(HOLIDAYS).is_some() {
        return Some(r.pos);
    }
    // 每周一, 每个星期一, 每逢周五.
    r = c;
    if r.longest(&[("每", ()), ("每个", ()), ("每逢", ())]).is_some() && zh_day(&mut r) {
        return Some(r.pos);
    }
    // 周一至周五, 星期一到五; 周五前, 周五以前: a day to come.
    r = c;
    if zh_day(&mut r) {
        r.ws0();
        if r.longest(BEFORE_ZH).is_some() {
            return Some(r.pos);
        }
        if r.longest(TO_ZH).is_some() {
            r.ws0();
            r.longest(WEEK_WORDS_ZH);
            if day_zh(&mut r).is_some() {
                return Some(r.pos);
            }
        }
    }
    // next Friday, every Monday, by Friday.
    r = c;
    if r.longest(BEFORE_EN).is_some() && r.ws1() && r.longest(WEEKDAYS_EN).is_some() {
        return Some(r.pos);
    }
    // Monday to Friday, Monday-Friday, between Monday and Friday.
    r = c;
    let between = r.phrase("between") && r.ws1();
    if !between {
        r = c;
    }
    r.longest(WEEKDAYS_EN)?;
    r.ws0();
    if between { r.phrase("and") } else { r.longest(TO_EN).is_some() }.then_some(())?;
    r.ws0();
    r.longest(WEEKDAYS_EN)?;
    Some(r.pos)
}

/// since Monday, since Nov 3, since 2026-11-01, since last week, 自11月1日以来, 11月1日以来,
/// 从11月1日起, 自从周一, 11月1日至今, Nov 1 to date, once its start has begun: from the first day
/// of that start through today.
fn since_span(start: Span, today: NaiveDate) -> Option<Span> {
    Some(Span::days(start.grain, start.explicit, start.first, today.succ_opt()?))
}

/// Reads a "since" phrase: where it ends and the span of its start.
fn since_phrase(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    // Each with whether it stands without a word before the start: 周一开始 is as often "starts on
    // Monday" as "since Monday", 从周一开始 is "since Monday".
    const UNTIL_NOW: &[(&str, bool)] = &[
        ("以来", true),
        ("起", true),
        ("开始", false),
        ("至今", true),
        ("迄今", true),
        ("到现在", true),
        ("到今天", true),
        ("to date", true),
        ("until now", true),
        ("till now", true),
        ("until today", true),
        ("to today", true),
        ("through today", true),
    ];
    // After "since" and 自从 the start alone is enough; after 自, 从 or nothing it needs 以来, 起, …
    // (来自11月1日 is "from 1 November", not "since").
    let lead = c.longest(&[("since", true), ("自从", true), ("自", false), ("从", false)]);
    if lead.is_some() {
        c.ws0();
    }
    let (mut r, start) = since_start(c, today)?;
    let mut until = r;
    until.ws0();
    let tail = until.longest(UNTIL_NOW);
    // 起 also starts words: 昨天起床 is no "since yesterday".
    let tail = tail.filter(|_| !until.rest().starts_with(['床', '飞', '诉', '来', '身']));
    match (lead, tail) {
        (Some(_), Some(_)) | (None, Some(true)) => r = until,
        (Some(true), None) => {}
        _ => return None,
    }
    Some((r.pos, start))
}

/// The start of a "since" phrase: a day, week, month, quarter, half year or year, named or relative;
/// the longest that reads.
fn since_start<'a>(c: Cur<'a>, today: NaiveDate) -> Option<(Cur<'a>, Span)> {
    longest_start(c, today, &[relative_day, calendar_relative, weekday, quarter, half_year, named_start, period_start])
}

/// The current week, month, quarter or year named as the start of a "since" phrase: by its bare
/// word before "to date" ("month to date"), as "the start (beginning) of the month" (or of any
/// other start: "since the beginning of last month"), or as 月初 / 年初 (月初以来, 年初至今).
fn period_start(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const THIS: &[(&str, Grain)] = &[
        ("week", Grain::Week),
        ("month", Grain::Month),
        ("quarter", Grain::Quarter),
        ("year", Grain::Year),
        ("月初", Grain::Month),
        ("年初", Grain::Year),
    ];
    let mut of = c;
    let the = of.phrase("the");
    let mut after_of = false;
    if (!the || of.ws1()) && of.longest(&[("start of", ()), ("beginning of", ())]).is_some() && of.ws1() {
        if let Some((end, span)) = since_start(of, today) {
            return Some((end.pos, span));
        }
        after_of = of.phrase("the") && of.ws1();
        if after_of {
            c = of;
        }
    }
    let grain = c.longest(THIS)?;
    // A bare English word is the period only after "the start of the" or before "to date"
    // ("since year 2025" is the year 2025).
    let to_date = || {
        let mut t = c;
        t.ws1() && t.phrase("to date")
    };
    if !after_of && c.s[..c.pos].ends_with(|ch: char| ch.is_ascii_alphabetic()) && !to_date() {
        return None;
    }
    let first = match grain {
        Grain::Week => week_start(today)?,
        Grain::Month => month_start(today.year(), today.month())?,
        Grain::Quarter => quarter_start(today)?,
        _ => NaiveDate::from_ymd_opt(today.year(), 1, 1)?,
    };
    Some((c.pos, Span::days(grain, false, first, today.succ_opt()?)))
}

/// The longest phrase any of `starts` reads at `c`: where it ends and its span.
fn longest_start<'a>(c: Cur<'a>, today: NaiveDate, starts: &[Matcher]) -> Option<(Cur<'a>, Span)> {
    let (end, span) = starts.iter().filter_map(|m| m(c, today)).max_by_key(|&(end, _)| end)?;
    Some((Cur { s: c.s, pos: end }, span))
}

/// A date, month or year as written (2026-11-01, 11月1日, Nov 3, October, 2026年), or a bare year,
/// which "since 2025" names.
fn named_start(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let mut y = c;
    let year = y.year().filter(|_| !y.peek().is_some_and(is_word_char));
    let mut p = c;
    if let Some(date) = partial(&mut p, today)
        && p.pos > y.pos
    {
        let (first, end_date) = date.span(today)?;
        return Some((p.pos, Span::days(date.grain(), true, first, end_date)));
    }
    c = y;
    Some((c.pos, year_span(year?, true)?))
}

/// 前, 以前, 之前 after a day: before it.
const BEFORE_ZH: &[(&str, ())] = &[("前", ()), ("以前", ()), ("之前", ())];

/// Whether the 前 that `s` starts with starts a word rather than meaning "before" or "ago": 前天 in
/// 昨天前天, 前年, 前端, 前台, 前后 (around).
fn starts_word_with_qian(s: &str) -> bool {
    s.strip_prefix('前')
        .is_some_and(|rest| rest.starts_with(['天', '日', '年', '端', '台', '缀', '景', '提', '面', '后']))
}

/// The first day of every open-ended window (more than a week ago, before Nov 1): a date before
/// anything a search finds.
const EPOCH: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("1970-01-01 is a date");

/// From [`EPOCH`] up to `end_date` (exclusive); `None` when that leaves no day.
fn before_span(grain: Grain, explicit: bool, end_date: NaiveDate) -> Option<Span> {
    (end_date > EPOCH).then(|| Span::days(grain, explicit, EPOCH, end_date))
}

/// A count of days, weeks, months or years before today, as in "3 days ago" or 超过一周.
#[derive(Debug, Clone, Copy)]
struct Ago {
    n: u32,
    unit: Unit,
    /// An open-ended past: more than that long ago (一周多以前, over two weeks ago).
    more: bool,
}

impl Ago {
    /// The day that many days, weeks, months or years before `today`.
    fn day(self, today: NaiveDate) -> Option<NaiveDate> {
        match self.unit {
            Unit::Day => today.checked_sub_days(Days::new(self.n.into())),
            Unit::Week => today.checked_sub_days(Days::new(7 * u64::from(self.n))),
            Unit::Month => today.checked_sub_months(Months::new(self.n)),
            Unit::Year => today.checked_sub_months(Months::new(self.n.checked_mul(12)?)),
            Unit::Hour | Unit::Quarter | Unit::HalfYear => None,
        }
    }

    fn grain(self) -> Grain {
        match self.unit {
            Unit::Hour => Grain::Hour,
            Unit::Day => Grain::Day,
            Unit::Week => Grain::Week,
            Unit::Month => Grain::Month,
            Unit::Quarter => Grain::Quarter,
            Unit::HalfYear => Grain::HalfYear,
            Unit::Year => Grain::Year,
        }
    }

    /// The window: an open-ended past up to the start of that day, or around it: a day either
    /// side of N days ago, the 7 days centred on N weeks ago, the calendar month of N months ago.
    /// "Three years ago" names no window: a year is too long to centre on a day.
    fn span(self, today: NaiveDate) -> Option<Span> {
        let day = self.day(today)?;
        if self.more {
            return before_span(self.grain(), false, day);
        }
        let around = |days: u64| {
            Some(Span::days(
                self.grain(),
                false,
                day.checked_sub_days(Days::new(days))?,
                day.checked_add_days(Days::new(days + 1))?,
            ))
        };
        match self.unit {
            Unit::Day => around(1),
            Unit::Week => around(3),
            Unit::Month => {
                let first = month_start(day.year(), day.month())?;
                Some(Span::days(Grain::Month, false, first, first.checked_add_months(Months::new(1))?))
            }
            _ => None,
        }
    }
}

/// 12天前, 两周前, 一个月前, 一周以前, 一个多月前, 两周以上之前, 超过一周, 3 days ago, a month ago,
/// more than a week ago, over two weeks ago: around that day, or (more than) before it.
fn ago(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let ago = ago_zh(&mut c).or_else(|| ago_en(&mut c))?;
    Some((c.pos, ago.span(today)?))
}

/// 12天前, 三天前, 两周前, 一个月前; open-ended: 一周以前, 三天之前, 十多天前, 一周多以前,
/// 一个多月前, 两周以上之前, 超过一周, 超过30天以前.
fn ago_zh(c: &mut Cur<'_>) -> Option<Ago> {
    const UNITS: &[(&str, Unit)] = &[
        ("天", Unit::Day),
        ("周", Unit::Week),
        ("星期", Unit::Week),
        ("礼拜", Unit::Week),
        ("月", Unit::Month),
        ("年", Unit::Year),
    ];
    let mut r = *c;
    // 第三天前 is an ordinal, not a count.
    if r.s[..r.pos].ends_with('第') {
        return None;
    }
    let over = r.lit("超过");
    if over {
        r.ws0();
    }
    let n = r.count_zh().filter(|&n| n > 0)?;
    r.ws0();
    // 十多天, 一个多月, 一周多.
    let mut more = over | r.lit("多");
    let counter = r.lit("个");
    more |= counter && r.lit("多");
    let unit = r.longest(UNITS)?;
    // 月 counts only after 个 (3月前 is about March), 年 only a small number (2025年前 is a year).
    if (unit == Unit::Month && !counter) || (unit == Unit::Year && n > 100) {
        return None;
    }
    more |= r.lit("多");
    more |= r.lit("以上");
    let tail = r.longest(&[("前", false), ("以前", true), ("之前", true)]);
    if tail == Some(false) && starts_word_with_qian(&r.s[r.pos - '前'.len_utf8()..]) {
        return None;
    }
    match tail {
        // 一周以前 is read as "a week or more ago".
        Some(open) => more |= open,
        // 超过一周 stands without 前; 一周多 alone is a length of time.
        None if over => {}
        None => return None,
    }
    *c = r;
    Some(Ago { n, unit, more })
}

/// 12 days ago, two weeks ago, a month ago; open-ended: more than a week ago, over two weeks
/// ago, older than 30 days, more than 3 months old.
fn ago_en(c: &mut Cur<'_>) -> Option<Ago> {
    const UNITS: &[(&str, Unit)] = &[
        ("day", Unit::Day),
        ("days", Unit::Day),
        ("week", Unit::Week),
        ("weeks", Unit::Week),
        ("month", Unit::Month),
        ("months", Unit::Month),
        ("year", Unit::Year),
        ("years", Unit::Year),
    ];
    let mut r = *c;
    let lead = r.longest(&[("more than", false), ("over", false), ("older than", true)]);
    if lead.is_some() && !r.ws1() {
        return None;
    }
    let n = r.count_en().or_else(|| r.longest(&[("a", 1), ("an", 1)])).filter(|&n| n > 0)?;
    r.ws1().then_some(())?;
    let unit = r.longest(UNITS)?;
    // "older than 30 days" needs no "ago"; "more than 30 days" alone is a length of time.
    // "3 months old" alone is an age, not a time.
    let mut tail = r;
    let ended = tail.ws1().then(|| tail.longest(&[("ago", false), ("old", true)])).flatten();
    match (lead, ended) {
        (_, Some(false)) | (Some(_), Some(true)) => r = tail,
        (Some(true), None) => {}
        _ => return None,
    }
    *c = r;
    Some(Ago { n, unit, more: lead.is_some() })
}

/// before last week, before 2026-11-01, prior to Nov 1, earlier than November, 11月1日之前,
/// 上周以前, 早于11月1日: from [`EPOCH`] up to the first day of that start, which has begun.
/// A start still to come is a deadline ("before 2027-01-01", 12月1日之前 asked in November, 下周五之前):
/// the days from today up to it, ahead.
fn before(c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let (end, start) = before_phrase(c, today)?;
    if start.first > today {
        return Some((end, Span::ahead(start.grain, start.explicit, today, start.first)));
    }
    Some((end, before_span(start.grain, start.explicit, start.first)?))
}

/// Reads a "before" phrase: where it ends and the span of its start. A date or month without a
/// year whose day this year is still to come is read as that day this year, a deadline.
fn before_phrase(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    const LEADS: &[(&str, ())] =
        &[("before", ()), ("prior to", ()), ("earlier than", ()), ("older than", ()), ("早于", ())];
    let lead = c.longest(LEADS).is_some();
    if lead {
        c.ws0();
    }
    // A weekday before: only of a named week (上周五以前, before last Friday); 周五以前 and
    // "before Friday" are days to come, read by weekday_no_window.
    let named_week = |c: Cur<'_>, today: NaiveDate| {
        let mut r = c;
        weekdays(&mut r).filter(|w| w.week != WeekOf::Recent)?;
        weekday(c, today)
    };
    let (mut r, mut start) =
        longest_start(c, today, &[relative_day, calendar_relative, named_week, quarter, half_year, named_start])?;
    let mut p = c;
    if let Some(date @ Partial { year: None, .. }) = partial(&mut p, today)
        && p.pos == r.pos
        && let Some((this_year, _)) = (Partial { year: Some(today.year()), ..date }).span(today)
        && this_year > today
    {
        start.first = this_year;
    }
    if !lead {
        r.ws0();
        r.longest(BEFORE_ZH)?;
        if starts_word_with_qian(&r.s[r.pos - '前'.len_utf8()..]) {
            return None;
        }
    }
    Some((r.pos, start))
}

/// A calendar period a deadline ends: this one (0) or so many after it.
#[derive(Debug, Clone, Copy)]
enum Period {
    Week(u32),
    Month(u32),
    Quarter(u32),
    Year(u32),
}

/// 月底前, 本月底之前, 下个月底前, 年底前, 季度末前, 到月底, 截至年底; by the end of the month,
/// before the end of this year, by the end of next month, by month-end, until end of quarter:
/// the days from today through the last day of that period, ahead.
fn by_end(mut c: Cur<'_>, today: NaiveDate) -> Option<(usize, Span)> {
    let period = by_end_zh(&mut c).or_else(|| by_end_en(&mut c))?;
    let this_month = month_start(today.year(), today.month())?;
    let (grain, end) = match period {
        Period::Week(n) => (Grain::Week, week_start(today)?.checked_add_days(Days::new(7 * (u64::from(n) + 1)))?),
        Period::Month(n) => (Grain::Month, this_month.checked_add_months(Months::new(n + 1))?),
        Period::Quarter(n) => {
            let this_quarter = quarter_start(today)?;
            (Grain::Quarter, this_quarter.checked_add_months(Months::new(3 * (n + 1)))?)
        }
        Period::Year(n) => (Grain::Year, NaiveDate::from_ymd_opt(today.year() + n as i32 + 1, 1, 1)?),
    };
    Some((c.pos, Span::ahead(grain, false, today, end)))
}

/// 月底前, 本月末之前, 下个月底前, 年底以前, 季度末为止, 到月底, 截至年底.
fn by_end_zh(c: &mut Cur<'_>) -> Option<Period> {
    const ENDS: &[(&str, Period)] = &[
        ("月底", Period::Month(0)),
        ("月末", Period::Month(0)),
        ("本月底", Period::Month(0)),
        ("本月末", Period::Month(0)),
        ("这个月底", Period::Month(0)),
        ("这个月末", Period::Month(0)),
        ("这月底", Period::Month(0)),
        ("当月底", Period::Month(0)),
        ("当月末", Period::Month(0)),
        ("下个月底", Period::Month(1)),
        ("下个月末", Period::Month(1)),
        ("下月底", Period::Month(1)),
        ("下月末", Period::Month(1)),
        ("季度末", Period::Quarter(0)),
        ("季末", Period::Quarter(0)),
        ("季度底", Period::Quarter(0)),
        ("本季度末", Period::Quarter(0)),
        ("本季末", Period::Quarter(0)),
        ("这个季度末", Period::Quarter(0)),
        ("下季度末", Period::Quarter(1)),
        ("下个季度末", Period::Quarter(1)),
        ("年底", Period::Year(0)),
        ("年末", Period::Year(0)),
        ("今年底", Period::Year(0)),
        ("今年年底", Period::Year(0)),
        ("今年末", Period::Year(0)),
        ("今年年末", Period::Year(0)),
        ("本年底", Period::Year(0)),
        ("本年度末", Period::Year(0)),
        ("明年底", Period::Year(1)),
        ("明年年底", Period::Year(1)),
        ("明年末", Period::Year(1)),
    ];
    const LEADS: &[(&str, ())] = &[("到", ()), ("截至", ()), ("截止", ()), ("截止到", ()), ("直到", ())];
    const TAILS: &[(&str, ())] = &[("前", ()), ("之前", ()), ("以前", ()), ("为止", ())];
    let mut r = *c;
    let lead = r.longest(LEADS).is_some();
    r.ws0();
    if xia_ends_a_word(&r) {
        return None;
    }
    let period = r.longest(ENDS)?;
    let mut tail = r;
    tail.ws0();
    if tail.longest(TAILS).is_some() && !starts_word_with_qian(&tail.s[tail.pos - '前'.len_utf8().min(tail.pos)..]) {
        r = tail;
    } else if !lead {
        return None;
    }
    *c = r;
    Some(period)
}

/// by the end of the month, before the end of this week, until the end of next quarter, by end
/// of month, by month-end, by year end, by EOM.
fn by_end_en(c: &mut Cur<'_>) -> Option<Period> {
    const LEADS: &[(&str, ())] = &[
        ("by", ()),
        ("before", ()),
        ("until", ()),
        ("till", ()),
        ("through", ()),
        ("ahead of", ()),
        ("no later than", ()),
    ];
    const UNITS: &[(&str, Unit)] =
        &[("week", Unit::Week), ("month", Unit::Month), ("quarter", Unit::Quarter), ("year", Unit::Year)];
    const SHORT: &[(&str, Period)] = &[
        ("month-end", Period::Month(0)),
        ("month end", Period::Month(0)),
        ("quarter-end", Period::Quarter(0)),
        ("quarter end", Period::Quarter(0)),
        ("year-end", Period::Year(0)),
        ("year end", Period::Year(0)),
        ("eom", Period::Month(0)),
        ("eoq", Period::Quarter(0)),
        ("eoy", Period::Year(0)),
    ];
    let mut r = *c;
    r.longest(LEADS)?;
    r.ws1().then_some(())?;
    if r.phrase("the") {
        r.ws1().then_some(())?;
    }
    if let Some(period) = r.longest(SHORT) {
        *c = r;
        return Some(period);
    }
    (r.phrase("end") && r.ws1() && r.phrase("of") && r.ws1()).then_some(())?;
    let ahead = match r.longest(&[("the", 0), ("this", 0), ("next", 1)]) {
        Some(n) => {
            r.ws1().then_some(())?;
            n
        }
        None => 0,
    };
    let period = match r.longest(UNITS)? {
        Unit::Week => Period::Week(ahead),
        Unit::Month => Period::Month(ahead),
        Unit::Quarter => Period::Quarter(ahead),
        _ => Period::Year(ahead),
    };
    *c = r;
    Some(period)
}
