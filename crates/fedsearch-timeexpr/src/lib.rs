//! Turns the time phrase in a user's question into a calendar time window in the user's zone.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//!
//! let tz = fedsearch_timeexpr::parse_tz("Asia/Shanghai").unwrap();
//! // 07:00 on 1 December in Shanghai is still 30 November in UTC.
//! let as_of = Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0).unwrap();
//! let w = fedsearch_timeexpr::resolve("我昨天买的商品为什么还没发货？", as_of, tz).unwrap();
//! assert_eq!(w.phrase, "昨天");
//! assert_eq!(w.label, "2026-11-30 in Asia/Shanghai");
//! assert_eq!(w.from, Utc.with_ymd_and_hms(2026, 11, 29, 16, 0, 0).unwrap());
//! assert_eq!(w.to, Utc.with_ymd_and_hms(2026, 11, 30, 16, 0, 0).unwrap());
//! ```
//!
//! # What it understands
//!
//! Every window but an hour window is made of whole calendar days in the user's zone: `from` is a
//! local midnight, `to` (exclusive) is the local midnight after the last day. Local midnights come
//! from the zone's rules, so a day across a DST change lasts 23 or 25 hours. "Today" is the local
//! day of `as_of`.
//!
//! An hour window (past 24 hours, 过去24小时) is not day-aligned: `from` is `as_of` less those
//! hours and `to` is `as_of` itself; its label names the local time it ends, "past 24 hours until
//! 2026-12-01 07:00 (Asia/Shanghai)". Hours are elapsed hours, whatever a DST change does to clocks.
//!
//! | kind | examples | window |
//! | --- | --- | --- |
//! | day | 今天, 昨天, 前天, 大前天, today, yesterday, the day before yesterday | that day |
//! | this … | 本周, 这周, 本月, 这个月, 本季度, 今年, this week/month/quarter/year; WTD, MTD, QTD, YTD, month-to-date (and "month to date", 年初至今: "since" phrases, below) | from the start of the week (Monday), month, quarter or year **up to and including today** |
//! | last … (calendar) | 上周, 上星期, 上上周, 上个月, 上季度, 去年, 前年, last/previous/prior week/month/quarter/year, the week before last | the whole previous calendar week (Monday–Sunday), month, quarter or year (the week before last: the one before) |
//! | rolling | 最近一周, 近两周, 过去7天, 最近三个月, 最近半年, 近一年, past week, last 3 days, the past 2 weeks, last 30 days, past six months, the past half year | the period ending today, today included: N days = today and the N−1 days before; N weeks = 7N days; N months = from the day after the same date N months ago (clamped to the month's end); half a year = 6 months |
//! | a few days back | 前几天, 前两天, 前些天, 最近几天, 近几天, 几天前, the past few days, a few days ago, the other day | the week up to today (today and the 6 days before); 前几天 after a word is "a few days before" it (到期前几天提醒): no window |
//! | a few weeks or months | 最近几周, 近几个月, the last few weeks, the past couple of months | rolling, as three (a couple: two) of them |
//! | hours | 过去24小时, 最近24小时, 近12小时, 最近两个小时内, past 24 hours, last 48 hours, in the last 6 hours, past 24h, the past hour, the last hour | the N hours up to `as_of` (see above) |
//! | weekend | 上周末, 上个周末, 本周末, 这周末, last weekend, this weekend, over the weekend, this past weekend | a Saturday and Sunday, up to today: "over the weekend" the last one begun, "last weekend" the one before this week's, "this weekend" once it has begun (before, it is ahead; a bare 周末 or "weekend" names none: 周末值班补贴) |
//! | weekday | 周一 … 周六, 周日, 周天, 星期一 … 星期日, 星期天, 礼拜一 … 礼拜天, Monday … Sunday, on Friday | the most recent such day that has begun: today if today is that day |
//! | weekday of a week | 上周五, 上星期五, 上个礼拜五, 上周的周五, 上上周五, 本周三, 这周三, 这个星期三, this Monday | that day of the previous (上上: the one before) or the current calendar week (Monday–Sunday); a day of this week not yet begun is ahead (below) |
//! | last weekday | last Friday, previous Friday, this past Friday | the most recent such day before today (on a Friday: a week ago) |
//! | weekdays from a week's | 上周一到周三, 上周二至周四, 本周一至周五, 上周五到周一 | from that day through the next such weekday (into the next week when it comes earlier in the week), ending today at the latest |
//! | ago | 12天前, 三天前, 两周前, 两个星期前, 一个月前, 3个月前, 12 days ago, a week ago, two weeks ago, a month ago | around that day, as people rarely say it exactly: N days ago = that day and one day either side (12天前 on 18 November: 5–7 November); N weeks ago = the 7 days centred on that day (day−3 … day+3); N months ago = the calendar month that day falls in (the same date N months ago, clamped to the month's end). Years ago (三年前, 3 years ago) give no window |
//! | more than … ago | more than a week ago, over two weeks ago, older than 30 days, more than 3 months old, 一周以前, 三天之前, 一周多以前, 十多天前, 一个多月前, 两周以上之前, 超过一周, 超过30天以前 | an open-ended past: from 1970-01-01 up to (not including) the day that long before today, i.e. through the day before it (more than a week ago on 18 November: through 10 November); months and years back from the same date, clamped to the month's end. 以前 and 之前 after a count are read as "or more" (一周以前 = more than a week ago); 前 alone is the point above |
//! | before | before last week, before yesterday, before 2026-11-01, prior to Nov 1, earlier than November, before 2025, before last Friday, 11月1日之前, 11月1日以前, 11月1日前, 2026-11-01之前, 上周以前, 上周五之前, 昨天之前, 2025年以前, 早于11月1日 | from 1970-01-01 up to (not including) the first day of the start (any day, week of a named week's weekday, month, quarter, half year or year above): before last week = through the Sunday before last week's Monday. A start still to come is a deadline, ahead (below; 12月1日之前 asked in November is this year's 1 December); a bare weekday (周五之前, 周五前, before Friday) gives no window |
//! | since | since Monday, since Nov 3, since 2026-11-01, since last week, since 2025, 自11月1日以来, 11月1日以来, 从11月1日起, 从周一开始, 自从周一, 11月1日至今, 今年以来, Nov 1 to date; the start of a period: month to date, year to date, since the start (beginning) of the month, since the beginning of last month, 月初以来, 年初至今 | from the first day of the start (any day, weekday, week, month, quarter, half year or year above) through today; a start not yet begun gives none |
//! | month | 10月, 十月, 10月份, 2026年10月, 去年10月, 2026-10, October, Oct 2026, October 2026 | that calendar month |
//! | part of a month | early June, mid-July, late October 2025, the beginning/middle/end of June, the end of last month, 6月上旬, 七月中旬, 2026年7月下旬, 9月初, 6月底, 6月末, 上个月底, 本月初 | early, 上旬, 初: days 1–10; mid, 中旬: 11–20; late, 下旬, 底, 末: the 21st to the month's end (a part of this month ends today; one not yet begun is ahead) |
//! | quarter | Q3, Q3 2026, 2026 Q3, third quarter of 2026, 第三季度, 三季度, 2026年第三季度 | that calendar quarter |
//! | half year | 上半年, 下半年, 2026年上半年, 去年下半年, H1 2026, 2026 H2, 2026-H1, first half of 2026, second half of last year | January–June or July–December; without a year (上半年, 下半年) of this year, and 下半年 before July gives no window; H1 and H2 need a year |
//! | year | 2025年, in 2025, during 2025, year 2025 | that calendar year |
//! | date | 2026-11-03, 2026/11/03, 11月3日, 11月3号, 2026年11月3日, Nov 3, November 3rd, 3 November 2026, November 3, 2026 | that day |
//! | range | from 2026-11-01 to 2026-11-15, between Nov 1 and Nov 15, Nov 1–15, 11月1日到11月15日, 11月1日至15日, 2026-11-01..2026-11-15, October to December | the first day of the start through the last day of the end, both included |
//!
//! Ahead (the window's [`Window::ahead`] is set; it starts today at the earliest):
//!
//! | kind | examples | window |
//! | --- | --- | --- |
//! | day | 明天, 明早, 明晚, 后天, 大后天, tomorrow, the day after tomorrow (not 明日: 说明日志) | that day |
//! | next … (calendar) | 下周, 下星期, 下个礼拜, 下下周, 下个月, 下月, 下季度, 明年, next week/month/quarter/year | the whole next calendar week (Monday–Sunday), month, quarter or year (下下周: the one after) |
//! | weekday ahead | 下周五, 下个星期五, 下周三到周五, next Friday, this coming Monday, 本周五 or this Friday before Friday | that day of next week (next Friday = 下周五), the first such day after today (this coming), this week's day still to come |
//! | weekend ahead | 下周末, next weekend, 这周末 / this weekend before Saturday | that Saturday and Sunday |
//! | rolling ahead | 未来30天, 未来 7 天, 接下来两周, 今后一个月, 往后7天, the next 30 days, next 7 days, in the coming 10 days, over the next two weeks, within the next month, the coming week, 未来24小时, the next 24 hours | today and the N days after it (未来30天 on 18 November: 18 November – 18 December); weeks = 7N days, months to the same date N months on; hours from `as_of` on |
//! | until a period ends | 月底前, 月末之前, 本月底之前, 到月底, 截至月底, 下个月底前, 季度末前, 年底前, 今年年底之前, by the end of the month, before the end of next month, until the end of this week, by end of quarter, by month-end, by year end, by EOM | today through the last day of that period |
//! | before a day to come | 12月1日之前 (asked in November), before Dec 1, before 2027-01-01, 本周五前, 下周五之前 | today up to (not including) that day |
//! | part of a month ahead | 下个月初, early next month, 本月下旬 before the 21st, 6月底 asked on 5 June | those days |
//! | month told by a word | next November, the coming November, this November, 今年11月, 明年3月 | next/coming: the first such month after this one; this and 今年: this year's |
//!
//! A named period that holds today (November asked on 18 November, Q4, 2026年, 下半年, Nov 1 to
//! Nov 30) is read as "this month" is: the window stops at the end of today and
//! [`Window::period_to`] keeps where the period ends. A period wholly after today (2026年12月
//! asked in November) is ahead.
//!
//! A quarter or date without a year is the most recent one that has begun by `as_of` ("Nov 3"
//! asked on 1 November 2026 is 3 November 2025). So is a month, unless it is one of the next two:
//! asked on 20 October 2026, "November", 11月 and 12月 are November and December 2026 (ahead: 8月份开船
//! asked in July is this August's sailings), January is January 2026; in December 2026 "October"
//! is October 2026. Say "next January", "this January", 今年1月, 明年1月 or "January 2027" for
//! another one: the other words of the question do not move it. In a range the end takes its missing year
//! (and month) from the start, moving to the next year when it would fall before it (Dec 20 – Jan 5).
//!
//! Counts without a word for the past or the future give no window: 12天内 and "within 12 days"
//! are as often promises (24小时内发货) as windows, "more than 30 days" and "3 months old" are
//! lengths; 过去12天 and "the past 12 days" are rolling, 未来12天 and "the next 12 days" ahead. "3天后"
//! and "in 3 days" are not read (签收7天后 counts from another event). "ago" and 前 read only after a count (digits, a
//! number word, "a"/"an", a Chinese numeral) and a unit: "long ago", "a while ago" and 第三天前 hold
//! no window, and 前 that starts a word (前天, 前年, 前端, 前后) means no "before".
//!
//! Some weekday phrases name no window and hide the words inside them: a range of bare weekdays is
//! a schedule (客服周一至周五工作, Monday to Friday, between Monday and Friday), as is a habit (每周一,
//! every Monday, and a plural: on Mondays), a bare weekday deadline (by Friday, 周五前: which
//! Friday is not said) or a holiday (Black Friday, Cyber Monday, Good Friday, 黑色星期五). 周 after a
//! number is a count of weeks and a day's character that starts a word is that word: 一周一次,
//! 两周三次, 上周一共 (上周 and 一共), 本周五个订单, 本周日志, 这周天气 hold no weekday.
//!
//! "The last week of October", "the first week of the month": a week or month followed by "of"
//! names a part of another period, so it is not read as the week up to today or as last week;
//! the period it belongs to is read instead (October).
//!
//! Two phrases joined by a connector (or, and, 或, 或者, 和, 及, 、, a comma) whose days adjoin are
//! one window: "yesterday or the day before", 昨天或前天, 昨天或前一天, "June and July", 9月、10月.
//! A period that goes on after today adjoins the next one as a whole: 这个月和下个月 and "this
//! month or next month" are both months, through the end of the next (ahead).
//! Phrases that do not adjoin are not joined ("2026-11-03 or yesterday": the rule below).
//!
//! When the question holds several phrases, the most specific one wins: the finest grain (hours,
//! then day, week, month, quarter, half year, year), then a named date over a relative word at the
//! same grain (2026-11-03 over yesterday), then the earliest in the text. Phrases that overlap keep
//! only the longest (2026年10月 rather than 10月 inside it). An open-ended past has the grain of its
//! unit or its start: more than a week ago and before last week are weeks, before 2026-11-01 a day.
//!
//! Documents are read too ([`mentions`]): every period a text names, as of the document's own
//! day, and the ISO weeks notices name by number (week 27, CW27, 2026-W27, 第27周), which a
//! question's "week 1" (of a course, of onboarding) is not read as.
//!
//! Chinese numbers may stand apart from their unit: 9 月份, 10 月中旬, 2026 年 10 月, 11 月 3 日,
//! 3 号, 3 天前 read as 9月份, 10月中旬 and so on.
//!
//! English is matched case-insensitively on word boundaries ("octopus" is no month, "Sundance" no
//! Sunday, "sincerely" no "since"). Weekdays are read by their full names only (sun, sat and wed
//! are words). May, March and every abbreviation (Oct, Sept, …) count as a month only next to a day
//! or a year ("May 3", "Oct 2026"); full names may stand alone ("in November"). Digits that are
//! part of a longer token are never read: INV-2025-0042, SO20261001 and order20261103 hold no date,
//! and a bare number is a year only with 年 or after "in", "during", "throughout", "for" or "year".

mod scan;
#[cfg(test)]
mod tests;

use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

/// The time window a question's time phrase stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The first instant: the local midnight that starts the first day; for an hour window
    /// (past 24 hours), `as_of` less those hours.
    pub from: DateTime<Utc>,
    /// The end, exclusive: the local midnight after the last day; for an hour window, `as_of`.
    pub to: DateTime<Utc>,
    /// The matched text, as it appears in the question.
    pub phrase: String,
    /// The days in the user's zone, for people: "2026-11-30 in Asia/Shanghai" for one day,
    /// "2026-11-01 – 2026-11-30 (Europe/Berlin)" for several (both ends included); for an hour
    /// window, "past 24 hours until 2026-11-30 07:00 (Asia/Shanghai)" (local time of `as_of`).
    pub label: String,
    /// The end (exclusive) of the calendar period the phrase names when it goes on after today:
    /// this week, this month, this quarter, this year, and a named period that holds today
    /// (November asked on 18 November, 2026年, Nov 1–30); the window itself stops at today.
    pub period_to: Option<DateTime<Utc>>,
    /// The phrase looks ahead: the window holds days still to come and starts today at the
    /// earliest — tomorrow, next week, 下个月, 未来30天, the next 30 days, 月底前, by the end of the
    /// month, 本周五 on a Wednesday, next November, a date not reached yet. A filter on the dates
    /// of what has happened (created, published, updated) has nothing to find there; one on dates
    /// that lie ahead (due, departure, expiry) does.
    pub ahead: bool,
}

/// Finds the most specific time phrase in `text` and returns its window of calendar days in `tz`
/// (or, for "past 24 hours", of the hours before `as_of`), with "today" being the local day of
/// `as_of`; `None` when the text holds no phrase it understands.
pub fn resolve(text: &str, as_of: DateTime<Utc>, tz: Tz) -> Option<Window> {
    let today = as_of.with_timezone(&tz).date_naive();
    let mut found = scan::best(text, today)?;
    let phrase = text[found.start..found.end].to_string();
    if let Some(hours) = found.hours {
        let local = as_of.with_timezone(&tz).format("%Y-%m-%d %H:%M");
        let count = if hours == 1 { "hour".to_string() } else { format!("{hours} hours") };
        let span = TimeDelta::try_hours(hours.into())?;
        let (from, to, label) = if found.ahead {
            (as_of, as_of.checked_add_signed(span)?, format!("next {count} from {local} ({})", tz.name()))
        } else {
            (as_of.checked_sub_signed(span)?, as_of, format!("past {count} until {local} ({})", tz.name()))
        };
        return Some(Window { from, to, phrase, label, period_to: None, ahead: found.ahead });
    }
    let tomorrow = today.succ_opt()?;
    let ahead = found.ahead || found.first > today;
    // A named period that holds today (November on 18 November) is read as "this month" is: the
    // window stops at today, the period's end is kept apart.
    if !ahead && found.end_date > tomorrow {
        found.period_end = found.period_end.max(Some(found.end_date));
        found.end_date = tomorrow;
    }
    let last = found.end_date.pred_opt()?;
    let label = if found.first == last {
        format!("{} in {}", found.first, tz.name())
    } else {
        format!("{} – {} ({})", found.first, last, tz.name())
    };
    let period_to = found.period_end.and_then(|d| local_midnight(tz, d));
    Some(Window {
        from: local_midnight(tz, found.first)?,
        to: local_midnight(tz, found.end_date)?,
        phrase,
        label,
        period_to,
        ahead,
    })
}

/// Days a document's text names: a time phrase or an ISO week number ([`mentions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mention {
    /// The first day.
    pub first: NaiveDate,
    /// The day after the last one (of the whole period: "this week" is Monday to Sunday).
    pub end: NaiveDate,
    /// Named dates (2026-07-03, July, week 27) rather than words relative to `today`.
    pub explicit: bool,
}

/// Every period a document's `text` names, read as of `today` (the document's own local day):
/// the phrases [`resolve`] reads, whole (this week to its Sunday), and the ISO weeks documents
/// name by number ("week 27", "CW27", "2026-W27", 第27周; without a year, the one nearest
/// `today`). Hour windows are left out. For a notice written before the days it announces: the
/// blank sailing of week 27, the port closed on 2026-07-03.
pub fn mentions(text: &str, today: NaiveDate) -> Vec<Mention> {
    scan::all(text, today)
        .into_iter()
        .filter(|f| f.hours.is_none())
        .map(|f| Mention { first: f.first, end: f.reach(), explicit: f.is_explicit() })
        .collect()
}

/// How documents write the days from `first` up to `end` (exclusive), for a search engine's
/// phrase queries — 2026-07-03, 2026/07/03, 7月3日, 7月3号, July 3, 3 July — and the ISO weeks
/// they fall in (week 27, 第27周, 2026-W27): what [`mentions`] reads back. Empty when the days are
/// more than `max_days` (a month is no list of its days).
pub fn written_days(first: NaiveDate, end: NaiveDate, max_days: u32) -> Vec<String> {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    if end <= first || (end - first).num_days() > i64::from(max_days) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut weeks = Vec::new();
    for day in first.iter_days().take_while(|d| *d < end) {
        let (m, d) = (day.month(), day.day());
        let month = MONTHS[day.month0() as usize];
        out.extend([
            day.format("%Y-%m-%d").to_string(),
            day.format("%Y/%m/%d").to_string(),
            format!("{m}月{d}日"),
            format!("{m}月{d}号"),
            format!("{month} {d}"),
            format!("{d} {month}"),
        ]);
        let week = day.iso_week();
        if !weeks.contains(&week) {
            weeks.push(week);
        }
    }
    for w in weeks {
        out.extend([
            format!("week {}", w.week()),
            format!("第{}周", w.week()),
            format!("{}-W{:02}", w.year(), w.week()),
        ]);
    }
    out
}

/// Parses an IANA zone name such as `Asia/Shanghai`, `Europe/Berlin` or `UTC`.
pub fn parse_tz(name: &str) -> Result<Tz, String> {
    name.trim().parse::<Tz>().map_err(|_| {
        format!("unknown time zone {name:?}: expected an IANA name such as Asia/Shanghai or Europe/Berlin")
    })
}

/// The instant a local day starts. Where a DST change skips midnight (some zones switch at 00:00),
/// the day starts at the first local time that exists; where midnight happens twice, at the first.
fn local_midnight(tz: Tz, day: NaiveDate) -> Option<DateTime<Utc>> {
    let midnight = day.and_time(NaiveTime::MIN);
    (0..=24 * 4)
        .find_map(|quarter_hours| {
            tz.from_local_datetime(&(midnight + TimeDelta::minutes(15 * quarter_hours))).earliest()
        })
        .map(|t| t.with_timezone(&Utc))
}
