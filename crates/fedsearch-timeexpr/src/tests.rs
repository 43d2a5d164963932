//! Table-driven tests: each row is a question, the instant it was asked and the expected phrase and
//! label (the label names the local days, so it checks the calendar arithmetic).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::{Window, parse_tz, resolve};

/// A Wednesday: 2026-11-18 12:00 in Shanghai, 05:00 in Berlin.
const WED: &str = "2026-11-18T04:00:00Z";

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn tz(name: &str) -> Tz {
    parse_tz(name).unwrap()
}

/// (question, as_of, zone, expected (phrase, label)).
type Row<'a> = (&'a str, &'a str, &'a str, Option<(&'a str, &'a str)>);

fn check(rows: &[Row<'_>]) {
    let mut failures = Vec::new();
    for &(text, as_of, zone, want) in rows {
        let got = resolve(text, utc(as_of), tz(zone));
        let got_pair = got.as_ref().map(|w| (w.phrase.as_str(), w.label.as_str()));
        if got_pair != want {
            failures.push(format!("{text:?} at {as_of} in {zone}: got {got_pair:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

const SH: &str = "Asia/Shanghai";
const BER: &str = "Europe/Berlin";

fn day(d: &str) -> String {
    format!("{d} in {SH}")
}

fn days(a: &str, b: &str) -> String {
    format!("{a} – {b} ({SH})")
}

/// Rows asked on [`WED`] in Shanghai: (question, phrase, label).
fn check_wed(rows: &[(&str, Option<(&str, String)>)]) {
    let rows: Vec<_> =
        rows.iter().map(|(text, want)| (*text, WED, SH, want.as_ref().map(|(p, l)| (*p, l.as_str())))).collect();
    check(&rows);
}

#[test]
fn days_relative_to_today() {
    check_wed(&[
        ("今天有哪些告警", Some(("今天", day("2026-11-18")))),
        ("我昨天买的商品为什么还没发货？", Some(("昨天", day("2026-11-17")))),
        ("昨日订单", Some(("昨日", day("2026-11-17")))),
        ("前天的工单", Some(("前天", day("2026-11-16")))),
        ("大前天的工单", Some(("大前天", day("2026-11-15")))),
        ("errors today", Some(("today", day("2026-11-18")))),
        ("What broke Yesterday?", Some(("Yesterday", day("2026-11-17")))),
        ("today's incidents", Some(("today", day("2026-11-18")))),
        ("the day before yesterday", Some(("the day before yesterday", day("2026-11-16")))),
        // Ahead: see `days_ahead`.
        ("明天的会议", Some(("明天", day("2026-11-19")))),
        ("meetings tomorrow", Some(("tomorrow", day("2026-11-19")))),
    ]);
}

#[test]
fn weeks() {
    check_wed(&[
        ("本周的发布", Some(("本周", days("2026-11-16", "2026-11-18")))),
        ("这周", Some(("这周", days("2026-11-16", "2026-11-18")))),
        ("this week", Some(("this week", days("2026-11-16", "2026-11-18")))),
        ("上周的故障", Some(("上周", days("2026-11-09", "2026-11-15")))),
        ("上星期", Some(("上星期", days("2026-11-09", "2026-11-15")))),
        ("Last Week", Some(("Last Week", days("2026-11-09", "2026-11-15")))),
        ("最近一周线上问题中哪些和支付超时有关", Some(("最近一周", days("2026-11-12", "2026-11-18")))),
        ("近一周", Some(("近一周", days("2026-11-12", "2026-11-18")))),
        ("过去一周", Some(("过去一周", days("2026-11-12", "2026-11-18")))),
        ("最近7天", Some(("最近7天", days("2026-11-12", "2026-11-18")))),
        ("最近七天内", Some(("最近七天内", days("2026-11-12", "2026-11-18")))),
        ("timeouts in the past week", Some(("the past week", days("2026-11-12", "2026-11-18")))),
        ("problems reported in the last week", Some(("the last week", days("2026-11-12", "2026-11-18")))),
        ("refunds over the last month", Some(("the last month", days("2026-10-19", "2026-11-18")))),
        ("last 7 days", Some(("last 7 days", days("2026-11-12", "2026-11-18")))),
        ("errors in the last 7 days?", Some(("the last 7 days", days("2026-11-12", "2026-11-18")))),
        ("近两周", Some(("近两周", days("2026-11-05", "2026-11-18")))),
        ("past 2 weeks", Some(("past 2 weeks", days("2026-11-05", "2026-11-18")))),
        ("the past two weeks", Some(("the past two weeks", days("2026-11-05", "2026-11-18")))),
    ]);
}

#[test]
fn rolling_days_and_months() {
    check_wed(&[
        ("最近三天", Some(("最近三天", days("2026-11-16", "2026-11-18")))),
        ("last 3 days", Some(("last 3 days", days("2026-11-16", "2026-11-18")))),
        ("最近30天", Some(("最近30天", days("2026-10-20", "2026-11-18")))),
        ("last 30 days", Some(("last 30 days", days("2026-10-20", "2026-11-18")))),
        ("最近十天", Some(("最近十天", days("2026-11-09", "2026-11-18")))),
        ("previous 5 days", Some(("previous 5 days", days("2026-11-14", "2026-11-18")))),
        ("最近一天", Some(("最近一天", day("2026-11-18")))),
        ("最近一个月", Some(("最近一个月", days("2026-10-19", "2026-11-18")))),
        ("近一个月", Some(("近一个月", days("2026-10-19", "2026-11-18")))),
        ("past month", Some(("past month", days("2026-10-19", "2026-11-18")))),
        ("最近三个月", Some(("最近三个月", days("2026-08-19", "2026-11-18")))),
        ("last 2 months", Some(("last 2 months", days("2026-09-19", "2026-11-18")))),
        ("近一年", Some(("近一年", days("2025-11-19", "2026-11-18")))),
        ("最近", None),
        ("last 0 days", None),
    ]);
    // A month back from 31 March is 28 February: the window starts on 1 March.
    check(&[(
        "past month",
        "2026-03-31T04:00:00Z",
        SH,
        Some(("past month", "2026-03-01 – 2026-03-31 (Asia/Shanghai)")),
    )]);
}

#[test]
fn months() {
    check_wed(&[
        ("本月", Some(("本月", days("2026-11-01", "2026-11-18")))),
        ("这个月", Some(("这个月", days("2026-11-01", "2026-11-18")))),
        ("这月", Some(("这月", days("2026-11-01", "2026-11-18")))),
        ("this month", Some(("this month", days("2026-11-01", "2026-11-18")))),
        ("上个月的账单", Some(("上个月", days("2026-10-01", "2026-10-31")))),
        ("上月", Some(("上月", days("2026-10-01", "2026-10-31")))),
        ("last month", Some(("last month", days("2026-10-01", "2026-10-31")))),
        ("10月的订单", Some(("10月", days("2026-10-01", "2026-10-31")))),
        ("十月的订单", Some(("十月", days("2026-10-01", "2026-10-31")))),
        ("10月份", Some(("10月份", days("2026-10-01", "2026-10-31")))),
        ("2026年10月", Some(("2026年10月", days("2026-10-01", "2026-10-31")))),
        ("2025年10月", Some(("2025年10月", days("2025-10-01", "2025-10-31")))),
        ("去年10月", Some(("去年10月", days("2025-10-01", "2025-10-31")))),
        ("今年二月", Some(("今年二月", days("2026-02-01", "2026-02-28")))),
        ("十二月", Some(("十二月", days("2026-12-01", "2026-12-31")))),
        ("October", Some(("October", days("2026-10-01", "2026-10-31")))),
        // The month that holds today stops at today, as "this month" does (its end is period_to).
        ("tickets opened in November", Some(("November", days("2026-11-01", "2026-11-18")))),
        ("in December", Some(("December", days("2026-12-01", "2026-12-31")))),
        ("Oct 2026", Some(("Oct 2026", days("2026-10-01", "2026-10-31")))),
        ("Oct. 2025", Some(("Oct. 2025", days("2025-10-01", "2025-10-31")))),
        ("October 2026", Some(("October 2026", days("2026-10-01", "2026-10-31")))),
        ("October of 2025", Some(("October of 2025", days("2025-10-01", "2025-10-31")))),
        ("2026-10", Some(("2026-10", days("2026-10-01", "2026-10-31")))),
        ("May 2026", Some(("May 2026", days("2026-05-01", "2026-05-31")))),
        ("march 2026", Some(("march 2026", days("2026-03-01", "2026-03-31")))),
        ("Sept 2026", Some(("Sept 2026", days("2026-09-01", "2026-09-30")))),
    ]);
}

#[test]
fn months_without_a_year_are_the_most_recent_one_begun() {
    check(&[
        ("October", "2026-12-15T04:00:00Z", SH, Some(("October", "2026-10-01 – 2026-10-31 (Asia/Shanghai)"))),
        ("December", "2026-12-15T04:00:00Z", SH, Some(("December", "2026-12-01 – 2026-12-15 (Asia/Shanghai)"))),
        ("November", "2027-02-10T04:00:00Z", SH, Some(("November", "2026-11-01 – 2026-11-30 (Asia/Shanghai)"))),
        ("11月", "2027-02-10T04:00:00Z", SH, Some(("11月", "2026-11-01 – 2026-11-30 (Asia/Shanghai)"))),
        ("一月", "2027-02-10T04:00:00Z", SH, Some(("一月", "2027-01-01 – 2027-01-31 (Asia/Shanghai)"))),
        ("上个月", "2027-01-10T04:00:00Z", SH, Some(("上个月", "2026-12-01 – 2026-12-31 (Asia/Shanghai)"))),
        ("上周", "2027-01-06T04:00:00Z", SH, Some(("上周", "2026-12-28 – 2027-01-03 (Asia/Shanghai)"))),
        ("去年", "2027-01-10T04:00:00Z", SH, Some(("去年", "2026-01-01 – 2026-12-31 (Asia/Shanghai)"))),
        ("Nov 3", "2026-11-01T04:00:00Z", SH, Some(("Nov 3", "2025-11-03 in Asia/Shanghai"))),
        // In Shanghai 1 January has begun while UTC is still in December.
        ("一月", "2026-12-31T17:00:00Z", SH, Some(("一月", "2027-01-01 in Asia/Shanghai"))),
        ("一月", "2026-12-31T15:00:00Z", SH, Some(("一月", "2027-01-01 – 2027-01-31 (Asia/Shanghai)"))),
        ("Feb 29", "2027-03-01T04:00:00Z", SH, Some(("Feb 29", "2024-02-29 in Asia/Shanghai"))),
    ]);
}

#[test]
fn years() {
    check_wed(&[
        ("今年的销售额", Some(("今年", days("2026-01-01", "2026-11-18")))),
        ("this year", Some(("this year", days("2026-01-01", "2026-11-18")))),
        ("去年", Some(("去年", days("2025-01-01", "2025-12-31")))),
        ("前年", Some(("前年", days("2024-01-01", "2024-12-31")))),
        ("last year", Some(("last year", days("2025-01-01", "2025-12-31")))),
        ("2025年的合同", Some(("2025年", days("2025-01-01", "2025-12-31")))),
        ("contracts signed in 2025", Some(("in 2025", days("2025-01-01", "2025-12-31")))),
        ("during 2024", Some(("during 2024", days("2024-01-01", "2024-12-31")))),
        ("year 2024", Some(("year 2024", days("2024-01-01", "2024-12-31")))),
    ]);
}

#[test]
fn explicit_dates() {
    check_wed(&[
        ("2026-11-03 的日志", Some(("2026-11-03", day("2026-11-03")))),
        ("logs from 2026/11/03", Some(("2026/11/03", day("2026-11-03")))),
        ("2026.11.03", Some(("2026.11.03", day("2026-11-03")))),
        ("2026-11-03.", Some(("2026-11-03", day("2026-11-03")))),
        ("2026-11-03 10:00 的日志", Some(("2026-11-03", day("2026-11-03")))),
        ("November 3 10:00", Some(("November 3", day("2026-11-03")))),
        ("11月3日的订单", Some(("11月3日", day("2026-11-03")))),
        ("11月3号发货了吗", Some(("11月3号", day("2026-11-03")))),
        ("十一月三日", Some(("十一月三日", day("2026-11-03")))),
        ("2026年11月3日", Some(("2026年11月3日", day("2026-11-03")))),
        ("2025年12月31日", Some(("2025年12月31日", day("2025-12-31")))),
        ("Nov 3", Some(("Nov 3", day("2026-11-03")))),
        ("on Nov. 3 we shipped", Some(("Nov. 3", day("2026-11-03")))),
        ("November 3rd", Some(("November 3rd", day("2026-11-03")))),
        ("3 November 2026", Some(("3 November 2026", day("2026-11-03")))),
        ("3rd of November", Some(("3rd of November", day("2026-11-03")))),
        ("November 3, 2026", Some(("November 3, 2026", day("2026-11-03")))),
        ("Nov 3 2025", Some(("Nov 3 2025", day("2025-11-03")))),
        ("May 3", Some(("May 3", day("2026-05-03")))),
        ("12月25日", Some(("12月25日", day("2025-12-25")))),
        ("2026-02-30", None),
        ("2月30日", None),
        ("2026-13-01", None),
    ]);
}

#[test]
fn ranges_include_their_last_day() {
    check_wed(&[
        ("from 2026-11-01 to 2026-11-15", Some(("from 2026-11-01 to 2026-11-15", days("2026-11-01", "2026-11-15")))),
        ("between Nov 1 and Nov 15", Some(("between Nov 1 and Nov 15", days("2026-11-01", "2026-11-15")))),
        ("Nov 1-15", Some(("Nov 1-15", days("2026-11-01", "2026-11-15")))),
        // The first day bare, its month from the end.
        (
            "tickets opened between 5 and 12 October?",
            Some(("between 5 and 12 October", days("2026-10-05", "2026-10-12"))),
        ),
        ("from 5 to 12 October", Some(("from 5 to 12 October", days("2026-10-05", "2026-10-12")))),
        ("5-12 Oct 2025", Some(("5-12 Oct 2025", days("2025-10-05", "2025-10-12")))),
        ("3-5 days", None),
        ("between 12 and 5 October", Some(("5 October", day("2026-10-05")))),
        ("Nov 1 – Nov 15, 2026", Some(("Nov 1 – Nov 15, 2026", days("2026-11-01", "2026-11-15")))),
        ("11月1日到11月15日的退款", Some(("11月1日到11月15日", days("2026-11-01", "2026-11-15")))),
        ("11月1日至15日", Some(("11月1日至15日", days("2026-11-01", "2026-11-15")))),
        ("2026年11月1日至2026年11月15日", Some(("2026年11月1日至2026年11月15日", days("2026-11-01", "2026-11-15")))),
        ("2026-11-01..2026-11-15", Some(("2026-11-01..2026-11-15", days("2026-11-01", "2026-11-15")))),
        ("October to November", Some(("October to November", days("2026-10-01", "2026-11-18")))),
        ("9月到10月", Some(("9月到10月", days("2026-09-01", "2026-10-31")))),
        // The end before the start: not a range, the start alone stands.
        ("from 2026-11-15 to 2026-11-01", Some(("2026-11-15", day("2026-11-15")))),
        // "from" alone is not part of the phrase.
        ("from Nov 3", Some(("Nov 3", day("2026-11-03")))),
    ]);
    // The end takes the next year when it would fall before the start.
    check(&[(
        "Dec 20 to Jan 5",
        "2027-01-10T04:00:00Z",
        SH,
        Some(("Dec 20 to Jan 5", "2026-12-20 – 2027-01-05 (Asia/Shanghai)")),
    )]);
}

#[test]
fn quarters() {
    check_wed(&[
        ("Q3 2026", Some(("Q3 2026", days("2026-07-01", "2026-09-30")))),
        ("2026 Q3", Some(("2026 Q3", days("2026-07-01", "2026-09-30")))),
        ("2025-Q4", Some(("2025-Q4", days("2025-10-01", "2025-12-31")))),
        ("q4", Some(("q4", days("2026-10-01", "2026-11-18")))),
        ("third quarter of 2025", Some(("third quarter of 2025", days("2025-07-01", "2025-09-30")))),
        ("第三季度", Some(("第三季度", days("2026-07-01", "2026-09-30")))),
        ("三季度的营收", Some(("三季度", days("2026-07-01", "2026-09-30")))),
        ("2025年第一季度", Some(("2025年第一季度", days("2025-01-01", "2025-03-31")))),
        ("上季度", Some(("上季度", days("2026-07-01", "2026-09-30")))),
        ("本季度", Some(("本季度", days("2026-10-01", "2026-11-18")))),
        ("last quarter", Some(("last quarter", days("2026-07-01", "2026-09-30")))),
        ("Q5", None),
    ]);
    check(&[
        ("Q4", "2027-02-10T04:00:00Z", SH, Some(("Q4", "2026-10-01 – 2026-12-31 (Asia/Shanghai)"))),
        ("上季度", "2027-02-10T04:00:00Z", SH, Some(("上季度", "2026-10-01 – 2026-12-31 (Asia/Shanghai)"))),
    ]);
}

#[test]
fn the_most_specific_phrase_wins() {
    check_wed(&[
        ("去年和昨天", Some(("昨天", day("2026-11-17")))),
        ("this year, in October", Some(("October", days("2026-10-01", "2026-10-31")))),
        ("2026-11-03 or yesterday", Some(("2026-11-03", day("2026-11-03")))),
        ("yesterday or 2026-11-03", Some(("2026-11-03", day("2026-11-03")))),
        ("上个月 最近一周", Some(("最近一周", days("2026-11-12", "2026-11-18")))),
        ("2025年 Q3", Some(("2025年 Q3", days("2025-07-01", "2025-09-30")))),
        ("今年10月3日", Some(("今年10月3日", day("2026-10-03")))),
        ("昨天和今天", Some(("昨天和今天", days("2026-11-17", "2026-11-18")))),
    ]);
}

#[test]
fn digits_inside_ids_are_not_dates() {
    check_wed(&[
        ("INV-2025-0042 的状态", None),
        ("订单SO20261001的物流", None),
        ("order 20261103 status", None),
        ("order20261103", None),
        ("ticket ABC-2026-11-03", None),
        ("error 2025", None),
        ("build 2026-10x", None),
        ("release v10.2025", None),
        ("SKU2025年款", None),
        ("case_2026-11-03", None),
        ("INV-2025-0042 yesterday", Some(("yesterday", day("2026-11-17")))),
        ("订单SO20261001昨天", Some(("昨天", day("2026-11-17")))),
        ("客户C1001：我昨天买的商品", Some(("昨天", day("2026-11-17")))),
    ]);
}

#[test]
fn english_words_need_boundaries() {
    check_wed(&[
        ("mayday alert", None),
        ("the octopus service", None),
        ("we decided", None),
        ("marching orders", None),
        ("I may ask", None),
        ("march on", None),
        ("may I ask about the octopus in march", None),
        ("Oct alone is too short", None),
        ("yesterdays", None),
        ("thisweek", None),
        ("lastyear", None),
        ("the novel 3 chapters", None),
    ]);
}

#[test]
fn no_phrase_gives_none() {
    check_wed(&[("", None), ("how do I reset my password", None), ("支付超时怎么处理", None), ("最近", None)]);
}

#[test]
fn yesterday_is_the_previous_local_calendar_day() {
    // 07:00 on 1 December in Shanghai is 23:00 on 30 November in UTC: "yesterday" is 30 November
    // in Shanghai, not the 24 hours before.
    let w = resolve("昨天", utc("2026-11-30T23:00:00Z"), tz(SH)).unwrap();
    assert_eq!(
        w,
        Window {
            from: utc("2026-11-29T16:00:00Z"),
            to: utc("2026-11-30T16:00:00Z"),
            phrase: "昨天".into(),
            label: "2026-11-30 in Asia/Shanghai".into(),
            period_to: None,
            ahead: false,
        }
    );
    // 21:00 on 30 November in Los Angeles is 05:00 on 1 December in UTC.
    let w = resolve("yesterday", utc("2026-12-01T05:00:00Z"), tz("America/Los_Angeles")).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-11-29T08:00:00Z"), utc("2026-11-30T08:00:00Z")));
    assert_eq!(w.label, "2026-11-29 in America/Los_Angeles");
}

#[test]
fn days_follow_daylight_saving_time() {
    // Berlin leaves summer time on 2026-10-25: that day lasts 25 hours.
    let w = resolve("2026-10-25", utc("2026-11-18T04:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-24T22:00:00Z"), utc("2026-10-25T23:00:00Z")));
    assert_eq!(w.to - w.from, chrono::TimeDelta::hours(25));
    let w = resolve("yesterday", utc("2026-10-26T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!(w.to - w.from, chrono::TimeDelta::hours(25));
    assert_eq!(w.label, "2026-10-25 in Europe/Berlin");
    // And enters it on 2026-03-29: 23 hours.
    let w = resolve("2026年3月29日", utc("2026-11-18T04:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-03-28T23:00:00Z"), utc("2026-03-29T22:00:00Z")));
    // The week across the change: Monday 00:00 CEST to Monday 00:00 CET.
    let w = resolve("last week", utc("2026-10-28T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-18T22:00:00Z"), utc("2026-10-25T23:00:00Z")));
    assert_eq!(w.label, "2026-10-19 – 2026-10-25 (Europe/Berlin)");
    // Santiago skips midnight on 2026-09-06: the day starts at 01:00.
    let w = resolve("2026-09-06", utc("2026-11-18T04:00:00Z"), tz("America/Santiago")).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-09-06T04:00:00Z"), utc("2026-09-07T03:00:00Z")));
}

#[test]
fn weekdays_chinese() {
    // WED is Wednesday 2026-11-18: this week is 16–22 November, the previous one 9–15.
    check_wed(&[
        ("周一的订单", Some(("周一", day("2026-11-16")))),
        ("周三", Some(("周三", day("2026-11-18")))),
        ("周四的工单", Some(("周四", day("2026-11-12")))),
        ("周日", Some(("周日", day("2026-11-15")))),
        ("周天", Some(("周天", day("2026-11-15")))),
        ("星期五", Some(("星期五", day("2026-11-13")))),
        ("星期天", Some(("星期天", day("2026-11-15")))),
        ("礼拜一", Some(("礼拜一", day("2026-11-16")))),
        ("礼拜天", Some(("礼拜天", day("2026-11-15")))),
        ("周一下午的会议", Some(("周一", day("2026-11-16")))),
        ("上周五的退款", Some(("上周五", day("2026-11-13")))),
        ("上星期五", Some(("上星期五", day("2026-11-13")))),
        ("上个星期一", Some(("上个星期一", day("2026-11-09")))),
        ("上礼拜天", Some(("上礼拜天", day("2026-11-15")))),
        ("上周的周五", Some(("上周的周五", day("2026-11-13")))),
        ("上周星期三", Some(("上周星期三", day("2026-11-11")))),
        ("上上周五", Some(("上上周五", day("2026-11-06")))),
        ("本周三", Some(("本周三", day("2026-11-18")))),
        ("这周一", Some(("这周一", day("2026-11-16")))),
        ("这个星期二", Some(("这个星期二", day("2026-11-17")))),
        // A day of this week that has not begun: that day, ahead (not 本周).
        ("本周五的会议", Some(("本周五", day("2026-11-20")))),
        ("这周日", Some(("这周日", day("2026-11-22")))),
        // A few days of a named week; this week's end at today.
        ("上周一到周三", Some(("上周一到周三", days("2026-11-09", "2026-11-11")))),
        ("上周二至周四的订单", Some(("上周二至周四", days("2026-11-10", "2026-11-12")))),
        ("本周一至周五", Some(("本周一至周五", days("2026-11-16", "2026-11-18")))),
        ("上周五到周一", Some(("上周五到周一", days("2026-11-13", "2026-11-16")))),
        ("周五五点", Some(("周五", day("2026-11-13")))),
        ("周一三点的会", Some(("周一", day("2026-11-16")))),
        ("上周三十个订单", Some(("上周", days("2026-11-09", "2026-11-15")))),
    ]);
}

#[test]
fn weekdays_that_name_no_day() {
    check_wed(&[
        // A range of bare weekdays is a schedule, not a window.
        ("客服周一至周五工作吗", None),
        ("星期一到五", None),
        ("周一~周五", None),
        ("客服周一至周五工作，昨天的工单", Some(("昨天", day("2026-11-17")))),
        // A habit, or a day to come.
        ("每周一发布", None),
        ("每个星期五", None),
        ("下周一", Some(("下周一", day("2026-11-23")))),
        ("下个星期五", Some(("下个星期五", day("2026-11-27")))),
        ("周五前能到吗", None),
        ("黑色星期五的订单", None),
        // 周 counting weeks, and words that start with the day's character.
        ("一周一次", None),
        ("两周三次", None),
        ("最近两周三次故障", Some(("最近两周", days("2026-11-05", "2026-11-18")))),
        ("上周一共有多少订单", Some(("上周", days("2026-11-09", "2026-11-15")))),
        ("本周五个订单", Some(("本周", days("2026-11-16", "2026-11-18")))),
        ("本周日志", Some(("本周", days("2026-11-16", "2026-11-18")))),
        ("这周天气", Some(("这周", days("2026-11-16", "2026-11-18")))),
        ("周期一个月", None),
        ("三周年", None),
    ]);
}

#[test]
fn weekdays_english() {
    check_wed(&[
        ("Monday", Some(("Monday", day("2026-11-16")))),
        ("what shipped on Friday?", Some(("Friday", day("2026-11-13")))),
        ("wednesday", Some(("wednesday", day("2026-11-18")))),
        ("Monday's orders", Some(("Monday", day("2026-11-16")))),
        ("last Friday", Some(("last Friday", day("2026-11-13")))),
        ("Last Wednesday", Some(("Last Wednesday", day("2026-11-11")))),
        ("previous Monday", Some(("previous Monday", day("2026-11-16")))),
        ("this past Sunday", Some(("this past Sunday", day("2026-11-15")))),
        ("this Monday", Some(("this Monday", day("2026-11-16")))),
        ("this Friday", Some(("this Friday", day("2026-11-20")))),
        ("next Friday", Some(("next Friday", day("2026-11-27")))),
        ("this coming Monday", Some(("this coming Monday", day("2026-11-23")))),
        ("Good Friday", None),
        ("every Monday", None),
        ("will it arrive by Friday", None),
        // A plural is a habit.
        ("orders on Mondays", None),
        ("Sundance festival", None),
        ("Black Friday sales", None),
        ("Cyber Monday", None),
        ("open Monday to Friday", None),
        ("Monday-Friday", None),
        ("between Monday and Friday", None),
        ("2026-11-03 or Monday", Some(("2026-11-03", day("2026-11-03")))),
    ]);
}

#[test]
fn weekdays_asked_on_monday_morning_in_shanghai() {
    // 07:00 on Monday 23 November in Shanghai is 23:00 on Sunday 22 November in UTC: the
    // previous week is 16–22 November, not 9–15.
    let monday = "2026-11-22T23:00:00Z";
    check(&[
        ("上周五的订单", monday, SH, Some(("上周五", "2026-11-20 in Asia/Shanghai"))),
        ("周一", monday, SH, Some(("周一", "2026-11-23 in Asia/Shanghai"))),
        ("周五", monday, SH, Some(("周五", "2026-11-20 in Asia/Shanghai"))),
        ("本周一", monday, SH, Some(("本周一", "2026-11-23 in Asia/Shanghai"))),
        ("本周二", monday, SH, Some(("本周二", "2026-11-24 in Asia/Shanghai"))),
        ("last Monday", monday, SH, Some(("last Monday", "2026-11-16 in Asia/Shanghai"))),
        ("上周日", monday, SH, Some(("上周日", "2026-11-22 in Asia/Shanghai"))),
    ]);
    let w = resolve("上周五", utc(monday), tz(SH)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-11-19T16:00:00Z"), utc("2026-11-20T16:00:00Z")));
}

#[test]
fn weekdays_follow_daylight_saving_time() {
    // Wednesday 2026-10-28 in Berlin; Sunday 25 October lasted 25 hours.
    let as_of = utc("2026-10-28T09:00:00Z");
    for text in ["Sunday", "last Sunday", "周日", "上周日", "上个星期天"] {
        let w = resolve(text, as_of, tz(BER)).unwrap();
        assert_eq!((w.from, w.to), (utc("2026-10-24T22:00:00Z"), utc("2026-10-25T23:00:00Z")), "{text}");
        assert_eq!(w.label, "2026-10-25 in Europe/Berlin", "{text}");
    }
    let w = resolve("周一", as_of, tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-25T23:00:00Z"), utc("2026-10-26T23:00:00Z")));
    let w = resolve("上周五", as_of, tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-22T22:00:00Z"), utc("2026-10-23T22:00:00Z")));
    let w = resolve("since Sunday", as_of, tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-24T22:00:00Z"), utc("2026-10-28T23:00:00Z")));
}

#[test]
fn hours_before_the_question() {
    let until = "until 2026-11-18 12:00 (Asia/Shanghai)";
    let label = |past: &str| format!("past {past} {until}");
    check_wed(&[
        ("errors in the past 24 hours", Some(("the past 24 hours", label("24 hours")))),
        ("last 48 hours", Some(("last 48 hours", label("48 hours")))),
        ("in the last 6 hours", Some(("the last 6 hours", label("6 hours")))),
        ("past 24h", Some(("past 24h", label("24 hours")))),
        ("last 3 hrs", Some(("last 3 hrs", label("3 hours")))),
        ("the past hour", Some(("the past hour", label("hour")))),
        ("in the last hour", Some(("the last hour", label("hour")))),
        ("past twelve hours", Some(("past twelve hours", label("12 hours")))),
        ("过去24小时的告警", Some(("过去24小时", label("24 hours")))),
        ("最近24小时", Some(("最近24小时", label("24 hours")))),
        ("近12小时", Some(("近12小时", label("12 hours")))),
        ("最近两个小时内", Some(("最近两个小时内", label("2 hours")))),
        ("过去一小时", Some(("过去一小时", label("hour")))),
        ("最近3h", Some(("最近3h", label("3 hours")))),
        ("昨天和过去24小时", Some(("过去24小时", label("24 hours")))),
        ("last 0 hours", None),
        ("24小时内发货", None),
        ("the last h", None),
    ]);
    // Not day-aligned: exactly the hours before as_of, which is the exclusive end.
    let w = resolve("过去24小时", utc("2026-11-30T23:00:00Z"), tz(SH)).unwrap();
    assert_eq!(
        w,
        Window {
            from: utc("2026-11-29T23:00:00Z"),
            to: utc("2026-11-30T23:00:00Z"),
            phrase: "过去24小时".into(),
            label: "past 24 hours until 2026-12-01 07:00 (Asia/Shanghai)".into(),
            period_to: None,
            ahead: false,
        }
    );
    // Hours are hours across a DST change: 24 of them, though the local clock moved 25.
    let w = resolve("past 24 hours", utc("2026-10-25T12:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-24T12:00:00Z"), utc("2026-10-25T12:00:00Z")));
    assert_eq!(w.label, "past 24 hours until 2026-10-25 13:00 (Europe/Berlin)");
}

#[test]
fn since_runs_through_today() {
    let to_today = |from: &str| days(from, "2026-11-18");
    check_wed(&[
        ("since Monday", Some(("since Monday", to_today("2026-11-16")))),
        ("errors since Nov 3", Some(("since Nov 3", to_today("2026-11-03")))),
        ("since 2026-11-01", Some(("since 2026-11-01", to_today("2026-11-01")))),
        ("since yesterday", Some(("since yesterday", to_today("2026-11-17")))),
        ("since last week", Some(("since last week", to_today("2026-11-09")))),
        ("since last Friday", Some(("since last Friday", to_today("2026-11-13")))),
        ("since October", Some(("since October", to_today("2026-10-01")))),
        ("since 2025", Some(("since 2025", to_today("2025-01-01")))),
        ("Nov 1 to date", Some(("Nov 1 to date", to_today("2026-11-01")))),
        ("自11月1日以来的退款", Some(("自11月1日以来", to_today("2026-11-01")))),
        ("11月1日以来", Some(("11月1日以来", to_today("2026-11-01")))),
        ("从11月1日起", Some(("从11月1日起", to_today("2026-11-01")))),
        ("11月1日至今", Some(("11月1日至今", to_today("2026-11-01")))),
        ("自从周一", Some(("自从周一", to_today("2026-11-16")))),
        ("从周一开始", Some(("从周一开始", to_today("2026-11-16")))),
        ("上周以来", Some(("上周以来", to_today("2026-11-09")))),
        ("2025年以来", Some(("2025年以来", to_today("2025-01-01")))),
        ("今年以来", Some(("今年以来", to_today("2026-01-01")))),
        // Not "since": a start that has not begun, 开始 without 从 or 自, 自 in 来自, 起 in 起床.
        ("since this Friday", None),
        ("since 2027-01-01", None),
        ("周一开始", Some(("周一", day("2026-11-16")))),
        ("来自11月1日的订单", Some(("11月1日", day("2026-11-01")))),
        ("昨天起床", Some(("昨天", day("2026-11-17")))),
        ("从11月1日到11月15日", Some(("11月1日到11月15日", days("2026-11-01", "2026-11-15")))),
        ("sincerely, yesterday", Some(("yesterday", day("2026-11-17")))),
    ]);
    // Since today's weekday: today alone.
    check(&[("since Monday", "2026-11-22T23:00:00Z", SH, Some(("since Monday", "2026-11-23 in Asia/Shanghai")))]);
}

#[test]
fn half_years() {
    check_wed(&[
        ("上半年的销售额", Some(("上半年", days("2026-01-01", "2026-06-30")))),
        ("下半年", Some(("下半年", days("2026-07-01", "2026-11-18")))),
        ("2025年上半年", Some(("2025年上半年", days("2025-01-01", "2025-06-30")))),
        ("去年下半年", Some(("去年下半年", days("2025-07-01", "2025-12-31")))),
        ("今年上半年", Some(("今年上半年", days("2026-01-01", "2026-06-30")))),
        ("H1 2026", Some(("H1 2026", days("2026-01-01", "2026-06-30")))),
        ("H2 2025", Some(("H2 2025", days("2025-07-01", "2025-12-31")))),
        ("2026 H2", Some(("2026 H2", days("2026-07-01", "2026-11-18")))),
        ("2026-H1", Some(("2026-H1", days("2026-01-01", "2026-06-30")))),
        ("2026年H2", Some(("2026年H2", days("2026-07-01", "2026-11-18")))),
        ("H1-2025", Some(("H1-2025", days("2025-01-01", "2025-06-30")))),
        ("H2 of this year", Some(("H2 of this year", days("2026-07-01", "2026-11-18")))),
        ("first half of 2026", Some(("first half of 2026", days("2026-01-01", "2026-06-30")))),
        ("second half of last year", Some(("second half of last year", days("2025-07-01", "2025-12-31")))),
        ("H1", None),
        ("h2 database", None),
        ("the first half", None),
        // Rolling, like N months.
        ("最近半年", Some(("最近半年", days("2026-05-19", "2026-11-18")))),
        ("近半年", Some(("近半年", days("2026-05-19", "2026-11-18")))),
        ("过去半年内", Some(("过去半年内", days("2026-05-19", "2026-11-18")))),
        ("past six months", Some(("past six months", days("2026-05-19", "2026-11-18")))),
        ("last 6 months", Some(("last 6 months", days("2026-05-19", "2026-11-18")))),
        ("the past half year", Some(("the past half year", days("2026-05-19", "2026-11-18")))),
        // 上上周: the week before the previous one.
        ("上上周", Some(("上上周", days("2026-11-02", "2026-11-08")))),
    ]);
    // Before July the second half of this year has not begun; with its year it is named.
    check(&[
        ("下半年", "2026-03-10T04:00:00Z", SH, None),
        ("今年下半年", "2026-03-10T04:00:00Z", SH, Some(("今年下半年", "2026-07-01 – 2026-12-31 (Asia/Shanghai)"))),
        ("上半年", "2026-03-10T04:00:00Z", SH, Some(("上半年", "2026-01-01 – 2026-03-10 (Asia/Shanghai)"))),
    ]);
}

/// An open-ended past in Shanghai: from 1970-01-01 through `last`.
fn until(last: &str) -> String {
    days("1970-01-01", last)
}

#[test]
fn ago_is_around_that_day() {
    // WED is 2026-11-18: 12 days ago is 6 November, two weeks ago 4 November, a month ago 18 October.
    check_wed(&[
        ("12天前的订单", Some(("12天前", days("2026-11-05", "2026-11-07")))),
        ("三天前", Some(("三天前", days("2026-11-14", "2026-11-16")))),
        ("一天前", Some(("一天前", days("2026-11-16", "2026-11-18")))),
        ("两周前的故障", Some(("两周前", days("2026-11-01", "2026-11-07")))),
        ("两个星期前", Some(("两个星期前", days("2026-11-01", "2026-11-07")))),
        ("一个礼拜前", Some(("一个礼拜前", days("2026-11-08", "2026-11-14")))),
        ("一个月前", Some(("一个月前", days("2026-10-01", "2026-10-31")))),
        ("3个月前", Some(("3个月前", days("2026-08-01", "2026-08-31")))),
        ("errors 12 days ago", Some(("12 days ago", days("2026-11-05", "2026-11-07")))),
        ("two weeks ago", Some(("two weeks ago", days("2026-11-01", "2026-11-07")))),
        ("a week ago", Some(("a week ago", days("2026-11-08", "2026-11-14")))),
        ("A month ago", Some(("A month ago", days("2026-10-01", "2026-10-31")))),
        ("1 day ago", Some(("1 day ago", days("2026-11-16", "2026-11-18")))),
        ("three months ago", Some(("three months ago", days("2026-08-01", "2026-08-31")))),
        // A year is too long to centre on a day; 3月 is March, not a count; an ordinal is no count.
        ("三年前", None),
        ("3 years ago", None),
        ("3月前", Some(("3月前", until("2026-02-28")))),
        ("第三天前", None),
        // "ago" needs a count and a unit before it; 前 starting a word is no "ago".
        ("days ago", None),
        ("long ago", None),
        ("a while ago", None),
        ("三天前端发布", None),
        ("12天前和昨天", Some(("12天前", days("2026-11-05", "2026-11-07")))),
    ]);
    // A month back from 31 March is 28 February: that month.
    check(&[(
        "a month ago",
        "2026-03-31T04:00:00Z",
        SH,
        Some(("a month ago", "2026-02-01 – 2026-02-28 (Asia/Shanghai)")),
    )]);
}

#[test]
fn ago_is_not_within_nor_an_id() {
    check_wed(&[
        // 内 and "within" are promises more than windows (like 24小时内发货); past N days are rolling.
        ("12天内发货", None),
        ("within 12 days", None),
        ("过去12天", Some(("过去12天", days("2026-11-07", "2026-11-18")))),
        ("最近12天内", Some(("最近12天内", days("2026-11-07", "2026-11-18")))),
        ("errors in the past 12 days", Some(("the past 12 days", days("2026-11-07", "2026-11-18")))),
        ("订单SO20261001的物流", None),
        ("INV-2026-0042 两周前", Some(("两周前", days("2026-11-01", "2026-11-07")))),
        ("订单SO20261001，3天前下的", Some(("3天前", days("2026-11-14", "2026-11-16")))),
        ("v12 days ago", None),
        ("v12天前", None),
        ("2025年前", Some(("2025年前", until("2024-12-31")))),
    ]);
}

#[test]
fn open_ended_past() {
    check_wed(&[
        ("more than a week ago", Some(("more than a week ago", until("2026-11-10")))),
        (
            "Can you pull up every ticket we got more than a week ago?",
            Some(("more than a week ago", until("2026-11-10"))),
        ),
        ("tickets opened over two weeks ago", Some(("over two weeks ago", until("2026-11-03")))),
        ("older than 30 days", Some(("older than 30 days", until("2026-10-18")))),
        ("older than a year", Some(("older than a year", until("2025-11-17")))),
        ("more than 3 months old", Some(("more than 3 months old", until("2026-08-17")))),
        ("一周以前", Some(("一周以前", until("2026-11-10")))),
        ("一周多以前", Some(("一周多以前", until("2026-11-10")))),
        ("超过一周未处理的工单", Some(("超过一周", until("2026-11-10")))),
        ("超过30天以前", Some(("超过30天以前", until("2026-10-18")))),
        ("两周以上之前", Some(("两周以上之前", until("2026-11-03")))),
        ("一个多月前", Some(("一个多月前", until("2026-10-17")))),
        ("十多天前", Some(("十多天前", until("2026-11-07")))),
        ("before last week", Some(("before last week", until("2026-11-08")))),
        ("earlier than November", Some(("earlier than November", until("2026-10-31")))),
        ("上周以前", Some(("上周以前", until("2026-11-08")))),
        ("昨天之前", Some(("昨天之前", until("2026-11-16")))),
        ("上周五以前", Some(("上周五以前", until("2026-11-12")))),
        ("before last Friday", Some(("before last Friday", until("2026-11-12")))),
        ("2025年以前", Some(("2025年以前", until("2024-12-31")))),
        // A length of time or an age is no window; "the day before yesterday" is a day.
        ("more than 30 days", None),
        ("3 months old", None),
        ("一周多", None),
        ("the day before yesterday", Some(("the day before yesterday", day("2026-11-16")))),
        ("before", None),
    ]);
}

#[test]
fn before_a_date() {
    check_wed(&[
        ("before 2026-11-01", Some(("before 2026-11-01", until("2026-10-31")))),
        ("orders prior to Nov 1", Some(("prior to Nov 1", until("2026-10-31")))),
        ("11月1日之前的退款", Some(("11月1日之前", until("2026-10-31")))),
        ("11月1日以前", Some(("11月1日以前", until("2026-10-31")))),
        ("2026-11-01之前", Some(("2026-11-01之前", until("2026-10-31")))),
        ("早于11月1日", Some(("早于11月1日", until("2026-10-31")))),
        ("11月1日前的订单", Some(("11月1日前", until("2026-10-31")))),
        ("上周五之前", Some(("上周五之前", until("2026-11-12")))),
        ("上周五前", Some(("上周五前", until("2026-11-12")))),
        // 前 starting a word: 前天 and 前年 are days and years of their own.
        ("昨天前天的订单", Some(("昨天", day("2026-11-17")))),
        ("上周一前后", Some(("上周", days("2026-11-09", "2026-11-15")))),
        // A day still to come is a deadline: from today up to it, ahead (not last year's day).
        ("12月1日之前能发货吗", Some(("12月1日之前", days("2026-11-18", "2026-11-30")))),
        ("will it ship before Dec 1", Some(("before Dec 1", days("2026-11-18", "2026-11-30")))),
        ("before 2027-01-01", Some(("before 2027-01-01", days("2026-11-18", "2026-12-31")))),
        ("周五以前能到吗", None),
        ("will it arrive before Friday", None),
        ("本周五之前", Some(("本周五之前", days("2026-11-18", "2026-11-19")))),
        ("本周五前", Some(("本周五前", days("2026-11-18", "2026-11-19")))),
        ("周五之前", None),
        ("11月30日前发货", Some(("11月30日前", days("2026-11-18", "2026-11-29")))),
    ]);
}

#[test]
fn ago_and_before_in_the_local_calendar() {
    // 07:00 on 1 December in Shanghai is 23:00 on 30 November in UTC: today is 1 December.
    let morning = utc("2026-11-30T23:00:00Z");
    let w = resolve("12天前", morning, tz(SH)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-11-17T16:00:00Z"), utc("2026-11-20T16:00:00Z")));
    assert_eq!(w.label, "2026-11-18 – 2026-11-20 (Asia/Shanghai)");
    let w = resolve("more than a week ago", morning, tz(SH)).unwrap();
    assert_eq!((w.from, w.to), (utc("1969-12-31T16:00:00Z"), utc("2026-11-23T16:00:00Z")));
    assert_eq!(w.label, "1970-01-01 – 2026-11-23 (Asia/Shanghai)");
    // Tuesday 1 December: last week started on Monday 23 November.
    let w = resolve("before last week", morning, tz(SH)).unwrap();
    assert_eq!(w.to, utc("2026-11-22T16:00:00Z"));
    let w = resolve("11月1日之前", morning, tz(SH)).unwrap();
    assert_eq!(w.to, utc("2026-10-31T16:00:00Z"));

    // Berlin leaves summer time on Sunday 2026-10-25, a day of 25 hours.
    let w = resolve("3 days ago", utc("2026-10-27T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-22T22:00:00Z"), utc("2026-10-25T23:00:00Z")));
    assert_eq!(w.label, "2026-10-23 – 2026-10-25 (Europe/Berlin)");
    let w = resolve("一周前", utc("2026-11-01T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-10-21T22:00:00Z"), utc("2026-10-28T23:00:00Z")));
    assert_eq!(w.to - w.from, chrono::TimeDelta::hours(7 * 24 + 1));
    let w = resolve("a month ago", utc("2026-11-18T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("2026-09-30T22:00:00Z"), utc("2026-10-31T23:00:00Z")));
    // Up to local midnight, summer time before the change, winter time after.
    let w = resolve("more than a week ago", utc("2026-11-01T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!((w.from, w.to), (utc("1969-12-31T23:00:00Z"), utc("2026-10-24T22:00:00Z")));
    let w = resolve("超过一周", utc("2026-11-02T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!(w.to, utc("2026-10-25T23:00:00Z"));
    let w = resolve("before 2026-10-26", utc("2026-11-02T09:00:00Z"), tz(BER)).unwrap();
    assert_eq!(w.to, utc("2026-10-25T23:00:00Z"));
}

#[test]
fn parse_tz_names_the_bad_zone() {
    assert_eq!(parse_tz("Asia/Shanghai"), Ok(Tz::Asia__Shanghai));
    assert_eq!(parse_tz(" UTC "), Ok(Tz::UTC));
    let err = parse_tz("Mars/Olympus").unwrap_err();
    assert!(err.contains("\"Mars/Olympus\""), "{err}");
    assert!(err.starts_with("unknown time zone"), "{err}");
}

#[test]
fn parts_of_a_month() {
    check_wed(&[
        ("Was there an outage in early June?", Some(("early June", days("2026-06-01", "2026-06-10")))),
        ("parts that left Shanghai in mid-July", Some(("mid-July", days("2026-07-11", "2026-07-20")))),
        ("late October 2025", Some(("late October 2025", days("2025-10-21", "2025-10-31")))),
        ("at the end of September", Some(("the end of September", days("2026-09-21", "2026-09-30")))),
        ("early May", Some(("early May", days("2026-05-01", "2026-05-10")))),
        ("the beginning of this month", Some(("the beginning of this month", days("2026-11-01", "2026-11-10")))),
        ("the end of last month", Some(("the end of last month", days("2026-10-21", "2026-10-31")))),
        ("mid this month", Some(("mid this month", days("2026-11-11", "2026-11-18")))),
        ("6月上旬的报关故障", Some(("6月上旬", days("2026-06-01", "2026-06-10")))),
        ("七月中旬发的货", Some(("七月中旬", days("2026-07-11", "2026-07-20")))),
        ("2025年10月下旬", Some(("2025年10月下旬", days("2025-10-21", "2025-10-31")))),
        ("9月初", Some(("9月初", days("2026-09-01", "2026-09-10")))),
        ("6月底到的货", Some(("6月底", days("2026-06-21", "2026-06-30")))),
        ("上个月底的账单", Some(("上个月底", days("2026-10-21", "2026-10-31")))),
        ("本月初", Some(("本月初", days("2026-11-01", "2026-11-10")))),
        // Not begun: those days, ahead; and words that only start like a part.
        ("本月下旬", Some(("本月下旬", days("2026-11-21", "2026-11-30")))),
        ("late delivery in June", Some(("June", days("2026-06-01", "2026-06-30")))),
        ("a mid-sized order", None),
        ("月底前付款", Some(("月底前", days("2026-11-18", "2026-11-30")))),
    ]);
}

#[test]
fn alternatives_and_lists_are_one_window() {
    check_wed(&[
        (
            "Which orders were placed yesterday or the day before?",
            Some(("yesterday or the day before", days("2026-11-16", "2026-11-17"))),
        ),
        ("昨天或前一天的订单", Some(("昨天或前一天", days("2026-11-16", "2026-11-17")))),
        ("昨天或前天的订单", Some(("昨天或前天", days("2026-11-16", "2026-11-17")))),
        ("today and yesterday", Some(("today and yesterday", days("2026-11-17", "2026-11-18")))),
        ("June and July", Some(("June and July", days("2026-06-01", "2026-07-31")))),
        ("9月、10月的退款", Some(("9月、10月", days("2026-09-01", "2026-10-31")))),
        // A period that goes on after today and the next one: both whole (ahead).
        ("这个月和下个月到期的服务合同有哪些？", Some(("这个月和下个月", days("2026-11-01", "2026-12-31")))),
        (
            "contracts ending this month or next month",
            Some(("this month or next month", days("2026-11-01", "2026-12-31"))),
        ),
        ("本周和下周的安装计划", Some(("本周和下周", days("2026-11-16", "2026-11-29")))),
        ("上个月和这个月的退款", Some(("上个月和这个月", days("2026-10-01", "2026-11-18")))),
        // Not joined: something else between them; the most specific wins as before.
        ("orders from yesterday that shipped in October", Some(("yesterday", day("2026-11-17")))),
    ]);
}

#[test]
fn weekends() {
    // WED is Wednesday 18 November; the weekend just past is 14–15 November.
    check_wed(&[
        ("上周末的告警", Some(("上周末", days("2026-11-14", "2026-11-15")))),
        ("what broke over the weekend?", Some(("over the weekend", days("2026-11-14", "2026-11-15")))),
        ("last weekend", Some(("last weekend", days("2026-11-14", "2026-11-15")))),
        ("this past weekend", Some(("this past weekend", days("2026-11-14", "2026-11-15")))),
        ("这周末值班", Some(("这周末", days("2026-11-21", "2026-11-22")))),
        ("周末值班补贴是多少", None),
        ("the weekend allowance", None),
    ]);
    // On Sunday 22 November: this weekend is 21–22, last weekend 14–15.
    let sun = "2026-11-22T04:00:00Z";
    check(&[
        ("这周末的订单", sun, SH, Some(("这周末", "2026-11-21 – 2026-11-22 (Asia/Shanghai)"))),
        ("over the weekend", sun, SH, Some(("over the weekend", "2026-11-21 – 2026-11-22 (Asia/Shanghai)"))),
        ("last weekend", sun, SH, Some(("last weekend", "2026-11-14 – 2026-11-15 (Asia/Shanghai)"))),
    ]);
    // On Saturday: this weekend so far is today.
    check(&[("this weekend", "2026-11-21T04:00:00Z", SH, Some(("this weekend", "2026-11-21 in Asia/Shanghai")))]);
}

#[test]
fn a_period_that_goes_on_after_today_says_where_it_ends() {
    // Monday 20 July 2026, 09:00 in Shanghai.
    let monday = utc("2026-07-20T01:00:00Z");
    let at = |q: &str| resolve(q, monday, tz(SH)).unwrap();
    let w = at("这周会不会有台风");
    assert_eq!((w.from, w.to), (utc("2026-07-19T16:00:00Z"), utc("2026-07-20T16:00:00Z")), "the week so far");
    assert_eq!(w.period_to, Some(utc("2026-07-26T16:00:00Z")), "the week runs to Sunday");
    assert_eq!(at("this month").period_to, Some(utc("2026-07-31T16:00:00Z")));
    assert_eq!(at("本季度").period_to, Some(utc("2026-09-30T16:00:00Z")));
    assert_eq!(at("今年").period_to, Some(utc("2026-12-31T16:00:00Z")));
    for past in ["上周", "最近一周", "昨天", "今天", "last month", "2026年6月"] {
        assert_eq!(at(past).period_to, None, "{past} is over by the end of today");
    }
    // On the last day of its period the window is the whole period: nothing goes on.
    assert_eq!(resolve("this week", utc("2026-07-26T04:00:00Z"), tz(SH)).unwrap().period_to, None);
}

#[test]
fn days_ahead() {
    check_wed(&[
        ("明天的会议", Some(("明天", day("2026-11-19")))),
        ("后天到货吗", Some(("后天", day("2026-11-20")))),
        ("the day after tomorrow", Some(("the day after tomorrow", day("2026-11-20")))),
        ("之后天气会好转", None),
        ("查一下周报", None),
        ("以下月份的数据", None),
        ("说明日志在哪里", None),
        // Whole calendar periods after this one.
        ("下周的维护窗口", Some(("下周", days("2026-11-23", "2026-11-29")))),
        ("下下周", Some(("下下周", days("2026-11-30", "2026-12-06")))),
        ("next week", Some(("next week", days("2026-11-23", "2026-11-29")))),
        ("下个月到期的合同", Some(("下个月", days("2026-12-01", "2026-12-31")))),
        ("contracts expiring next month", Some(("next month", days("2026-12-01", "2026-12-31")))),
        ("下季度", Some(("下季度", days("2027-01-01", "2027-03-31")))),
        ("next year", Some(("next year", days("2027-01-01", "2027-12-31")))),
        ("明年", Some(("明年", days("2027-01-01", "2027-12-31")))),
        ("明年3月", Some(("明年3月", days("2027-03-01", "2027-03-31")))),
        ("下周末", Some(("下周末", days("2026-11-28", "2026-11-29")))),
        ("下周三到周五", Some(("下周三到周五", days("2026-11-25", "2026-11-27")))),
        ("下个月初", Some(("下个月初", days("2026-12-01", "2026-12-10")))),
        ("early next month", Some(("early next month", days("2026-12-01", "2026-12-10")))),
        // Today and the N days after it.
        ("未来30天到期的发票", Some(("未来30天", days("2026-11-18", "2026-12-18")))),
        ("未来 7 天", Some(("未来 7 天", days("2026-11-18", "2026-11-25")))),
        ("接下来两周", Some(("接下来两周", days("2026-11-18", "2026-12-02")))),
        ("今后一个月", Some(("今后一个月", days("2026-11-18", "2026-12-18")))),
        ("the next 30 days", Some(("the next 30 days", days("2026-11-18", "2026-12-18")))),
        ("due in the coming 10 days", Some(("in the coming 10 days", days("2026-11-18", "2026-11-28")))),
        ("over the next two weeks", Some(("over the next two weeks", days("2026-11-18", "2026-12-02")))),
        ("the coming week", Some(("the coming week", days("2026-11-18", "2026-11-25")))),
        ("the next day", None),
        // Through the end of a period.
        ("月底前付款", Some(("月底前", days("2026-11-18", "2026-11-30")))),
        ("本月底之前", Some(("本月底之前", days("2026-11-18", "2026-11-30")))),
        ("到月底还有哪些没发", Some(("到月底", days("2026-11-18", "2026-11-30")))),
        ("下个月底前", Some(("下个月底前", days("2026-11-18", "2026-12-31")))),
        ("年底前", Some(("年底前", days("2026-11-18", "2026-12-31")))),
        ("by the end of the month", Some(("by the end of the month", days("2026-11-18", "2026-11-30")))),
        ("before the end of next month", Some(("before the end of next month", days("2026-11-18", "2026-12-31")))),
        ("by end of quarter", Some(("by end of quarter", days("2026-11-18", "2026-12-31")))),
        ("by month-end", Some(("by month-end", days("2026-11-18", "2026-11-30")))),
        ("by the end of this week", Some(("by the end of this week", days("2026-11-18", "2026-11-22")))),
        // Months told by a word before them.
        ("next November", Some(("next November", days("2027-11-01", "2027-11-30")))),
        ("next December", Some(("next December", days("2026-12-01", "2026-12-31")))),
        ("this December", Some(("this December", days("2026-12-01", "2026-12-31")))),
        ("今年12月", Some(("今年12月", days("2026-12-01", "2026-12-31")))),
        // A month of the next two is the coming one; one further ahead is last year's.
        ("December", Some(("December", days("2026-12-01", "2026-12-31")))),
        ("一月", Some(("一月", days("2027-01-01", "2027-01-31")))),
        ("February", Some(("February", days("2026-02-01", "2026-02-28")))),
    ]);
    let at = |q: &str| resolve(q, utc(WED), tz(SH)).unwrap();
    for q in ["明天", "下周", "下个月", "未来30天", "月底前", "by the end of the month", "本周五", "next December"]
    {
        assert!(at(q).ahead, "{q} looks ahead");
    }
    for q in ["昨天", "本周", "这个月", "November", "最近30天", "上周五"] {
        assert!(!at(q).ahead, "{q} does not look ahead");
    }
    // Hours from the question on.
    let w = at("未来24小时");
    assert_eq!((w.from, w.to), (utc(WED), utc("2026-11-19T04:00:00Z")));
    assert_eq!(w.label, "next 24 hours from 2026-11-18 12:00 (Asia/Shanghai)");
    // November asked on 20 October is the coming one; January is last year's unless told.
    let oct = utc("2026-10-20T04:00:00Z");
    assert_eq!(resolve("11月的发票", oct, tz(SH)).unwrap().label, days("2026-11-01", "2026-11-30"));
    assert!(resolve("11月的发票", oct, tz(SH)).unwrap().ahead);
    assert_eq!(resolve("1月的发票", oct, tz(SH)).unwrap().label, days("2026-01-01", "2026-01-31"));
    assert_eq!(resolve("明年1月的发票", oct, tz(SH)).unwrap().label, days("2027-01-01", "2027-01-31"));
    let july = utc("2026-07-20T02:00:00Z");
    assert_eq!(resolve("8 月份开船的柜子", july, tz(SH)).unwrap().label, days("2026-08-01", "2026-08-31"));
    assert_eq!(resolve("今年11月的发票", oct, tz(SH)).unwrap().label, days("2026-11-01", "2026-11-30"));
    assert_eq!(resolve("invoices due next November", oct, tz(SH)).unwrap().label, days("2026-11-01", "2026-11-30"));
    assert_eq!(resolve("November 2026", oct, tz(SH)).unwrap().label, days("2026-11-01", "2026-11-30"));
}

#[test]
fn spaces_between_digits_and_their_chinese_unit() {
    check_wed(&[
        ("9 月份的账单", Some(("9 月份", days("2026-09-01", "2026-09-30")))),
        ("10 月中旬", Some(("10 月中旬", days("2026-10-11", "2026-10-20")))),
        ("7 月中旬的航班", Some(("7 月中旬", days("2026-07-11", "2026-07-20")))),
        ("10月 下旬", Some(("10月 下旬", days("2026-10-21", "2026-10-31")))),
        ("2026 年 10 月", Some(("2026 年 10 月", days("2026-10-01", "2026-10-31")))),
        ("11 月 3 日", Some(("11 月 3 日", day("2026-11-03")))),
        ("11月 3 号发的货", Some(("11月 3 号", day("2026-11-03")))),
        ("3 天前", Some(("3 天前", days("2026-11-14", "2026-11-16")))),
        ("最近 7 天", Some(("最近 7 天", days("2026-11-12", "2026-11-18")))),
        ("2025 年", Some(("2025 年", days("2025-01-01", "2025-12-31")))),
        ("11 月 1 日到 11 月 15 日", Some(("11 月 1 日到 11 月 15 日", days("2026-11-01", "2026-11-15")))),
    ]);
}

#[test]
fn to_date_the_week_before_last_and_parts_of_named_periods() {
    // WED is Wednesday 18 November 2026.
    check_wed(&[
        ("orders month to date", Some(("month to date", days("2026-11-01", "2026-11-18")))),
        ("MTD refunds", Some(("MTD", days("2026-11-01", "2026-11-18")))),
        ("revenue YTD", Some(("YTD", days("2026-01-01", "2026-11-18")))),
        ("year-to-date claims", Some(("year-to-date", days("2026-01-01", "2026-11-18")))),
        ("tickets week to date", Some(("week to date", days("2026-11-16", "2026-11-18")))),
        ("incidents the week before last", Some(("the week before last", days("2026-11-02", "2026-11-08")))),
        ("since the start of the month", Some(("since the start of the month", days("2026-11-01", "2026-11-18")))),
        (
            "since the beginning of the year",
            Some(("since the beginning of the year", days("2026-01-01", "2026-11-18"))),
        ),
        ("本月以来的退款", Some(("本月以来", days("2026-11-01", "2026-11-18")))),
        ("年初至今的订单", Some(("年初至今", days("2026-01-01", "2026-11-18")))),
        ("自月初以来", Some(("自月初以来", days("2026-11-01", "2026-11-18")))),
        (
            "since the beginning of last month",
            Some(("since the beginning of last month", days("2026-10-01", "2026-11-18"))),
        ),
        // A bare "year" is no start of its own: not this year.
        ("refunds since year 2025", Some(("year 2025", days("2025-01-01", "2025-12-31")))),
        // A week of a named month is that week, not the week up to today nor last week.
        ("in the last week of October", Some(("the last week of October", days("2026-10-25", "2026-10-31")))),
        ("the first week of October", Some(("the first week of October", days("2026-10-01", "2026-10-07")))),
        ("the last week", Some(("the last week", days("2026-11-12", "2026-11-18")))),
        ("mtdx and ytd-2", None),
    ]);
}

#[test]
fn holidays_name_their_days_or_the_week_beside_them() {
    // WED is 2026-11-18.
    check_wed(&[
        ("国庆期间有哪些投诉", Some(("国庆期间", days("2026-10-01", "2026-10-07")))),
        ("国庆节前发的货", Some(("国庆节前", days("2026-09-24", "2026-09-30")))),
        ("春节后", Some(("春节后", days("2026-02-24", "2026-03-02")))),
        ("过年前最后发货日", Some(("过年前", days("2026-02-09", "2026-02-15")))),
        ("双十一期间的订单", Some(("双十一期间", day("2026-11-11")))),
        ("orders during Singles' Day", Some(("Singles' Day", day("2026-11-11")))),
        ("五一假期", Some(("五一假期", days("2026-05-01", "2026-05-05")))),
        ("中秋节", Some(("中秋节", days("2026-09-25", "2026-09-27")))),
    ]);
    // The coming one within 60 days: Christmas asked in November, 春节 asked in December.
    check(&[
        ("Christmas orders", "2026-11-18T04:00:00Z", SH, Some(("Christmas", "2026-12-25 in Asia/Shanghai"))),
        ("春节期间发货吗", "2026-12-20T04:00:00Z", SH, Some(("春节期间", "2027-02-05 – 2027-02-12 (Asia/Shanghai)"))),
    ]);
}

#[test]
fn halves_of_a_month_and_this_months_parts_alone() {
    check_wed(&[
        ("the first half of October", Some(("the first half of October", days("2026-10-01", "2026-10-15")))),
        ("second half of October", Some(("second half of October", days("2026-10-16", "2026-10-31")))),
        ("10月上半月", Some(("10月上半月", days("2026-10-01", "2026-10-15")))),
        ("上半月的工单", Some(("上半月", days("2026-11-01", "2026-11-15")))),
        ("月初的工单", Some(("月初", days("2026-11-01", "2026-11-10")))),
        ("月中", Some(("月中", days("2026-11-11", "2026-11-18")))),
    ]);
}

#[test]
fn a_week_by_a_day_in_it_or_by_its_place_in_a_month() {
    // WED is 2026-11-18; 9 November 2026 is a Monday, 4 November a Wednesday.
    check_wed(&[
        ("tickets from the week of November 4", Some(("the week of November 4", days("2026-11-02", "2026-11-08")))),
        ("the first week of November", Some(("the first week of November", days("2026-11-01", "2026-11-07")))),
        ("in the second week of October", Some(("the second week of October", days("2026-10-08", "2026-10-14")))),
        ("the last week of October", Some(("the last week of October", days("2026-10-25", "2026-10-31")))),
        ("10月第一周的订单", Some(("10月第一周", days("2026-10-01", "2026-10-07")))),
        ("十月的最后一周", Some(("十月的最后一周", days("2026-10-25", "2026-10-31")))),
        ("11月第三个星期", Some(("11月第三个星期", days("2026-11-15", "2026-11-18")))),
    ]);
}

/// `mentions(text, today)` as (first, last day included, explicit) triples.
fn mentioned(text: &str, today: &str) -> Vec<(String, String, bool)> {
    let today = chrono::NaiveDate::parse_from_str(today, "%Y-%m-%d").unwrap();
    crate::mentions(text, today)
        .into_iter()
        .map(|m| (m.first.to_string(), m.end.pred_opt().unwrap().to_string(), m.explicit))
        .collect()
}

fn week(first: &str, last: &str) -> Vec<(String, String, bool)> {
    vec![(first.to_string(), last.to_string(), true)]
}

#[test]
fn a_document_names_iso_weeks_by_number() {
    // ISO week 27 of 2026 is Monday 29 June to Sunday 5 July.
    let w27 = week("2026-06-29", "2026-07-05");
    for text in [
        "COSCO: blank sailing on the AE7 service, week 27",
        "blank sailing in Week 27 2026",
        "2026 week 27 blank sailing",
        "wk27 cancelled",
        "KW 27: Streik",
        "CW27",
        "2026-W27",
        "2026W27 schedule",
        "第27周停航",
        "2026年第 27 周停航",
        "第27个星期",
    ] {
        assert_eq!(mentioned(text, "2026-06-18"), w27, "{text}");
    }
    // Without a year, the week of that number nearest the document's day.
    assert_eq!(mentioned("week 1", "2026-12-20"), week("2027-01-04", "2027-01-10"));
    assert_eq!(mentioned("week 52", "2027-01-02"), week("2026-12-21", "2026-12-27"));
    // Not weeks: a count, a number glued to a word, a week number out of range, a weekly habit.
    for text in ["27 weeks", "weekly 27", "week27x", "week 54", "INV-2026-W27A", "两周"] {
        assert_eq!(mentioned(text, "2026-06-18"), Vec::new(), "{text}");
    }
}

#[test]
fn a_document_names_days_relative_to_its_own_day_and_whole_periods() {
    // Written on Thursday 18 June 2026: its "next week" is 22–28 June; "this week" is the whole
    // week, Sunday included; a named date is explicit; hour windows are no days.
    assert_eq!(mentioned("closed next week", "2026-06-18"), vec![("2026-06-22".into(), "2026-06-28".into(), false)]);
    assert_eq!(mentioned("this week", "2026-06-18"), vec![("2026-06-15".into(), "2026-06-21".into(), false)]);
    assert_eq!(
        mentioned("系统 2026-07-03 夜间暂停申报，7月6日恢复", "2026-06-18"),
        vec![("2026-07-03".into(), "2026-07-03".into(), true), ("2025-07-06".into(), "2025-07-06".into(), true)]
    );
    assert_eq!(mentioned("in the past 24 hours", "2026-06-18"), Vec::new());
}

#[test]
fn a_few_days_back_is_the_week_up_to_today() {
    let week = || days("2026-11-12", "2026-11-18");
    check_wed(&[
        ("前几天有客户说钱付了，订单却一直卡在支付中", Some(("前几天", week()))),
        ("客户说前几天下的单还没发货", Some(("前几天", week()))),
        ("我前些天提交的工单", Some(("前些天", week()))),
        ("最近几天的退款", Some(("最近几天", week()))),
        ("几天前的故障", Some(("几天前", week()))),
        ("payments failed a few days ago", Some(("a few days ago", week()))),
        ("what broke in the past few days", Some(("the past few days", week()))),
        ("I called the other day", Some(("the other day", week()))),
        // A few days before something else: no window.
        ("到期前几天会提醒吗", None),
        ("发货前几天可以改地址吗", None),
    ]);
}

#[test]
fn the_days_a_window_holds_are_written_as_documents_write_them_and_read_back() {
    let date = |s: &str| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    let (first, end) = (date("2026-07-03"), date("2026-07-05"));
    let written = crate::written_days(first, end, 14);
    for form in ["2026-07-03", "2026/07/04", "7月3日", "7月4号", "July 3", "4 July", "week 27", "第27周", "2026-W27"]
    {
        assert!(written.iter().any(|w| w == form), "{form} in {written:?}");
    }
    assert_eq!(written.len(), 2 * 6 + 3, "two days, one week: {written:?}");
    // Each form is read back as a day or the week that holds those days.
    for w in &written {
        let m = crate::mentions(w, date("2026-07-10"));
        assert!(m.iter().any(|m| m.first < end && first < m.end), "{w}: {m:?}");
    }
    assert!(crate::written_days(date("2026-07-01"), date("2026-08-01"), 14).is_empty(), "a month");
    assert!(crate::written_days(end, first, 14).is_empty(), "no days");
}

#[test]
fn a_few_weeks_or_months_are_three_a_couple_two_and_prior_is_previous() {
    check_wed(&[
        ("what broke over the last few weeks", Some(("the last few weeks", days("2026-10-29", "2026-11-18")))),
        ("the past couple of weeks", Some(("the past couple of weeks", days("2026-11-05", "2026-11-18")))),
        ("refunds in the past few months", Some(("the past few months", days("2026-08-19", "2026-11-18")))),
        ("最近几周的故障", Some(("最近几周", days("2026-10-29", "2026-11-18")))),
        ("近几个月的退款", Some(("近几个月", days("2026-08-19", "2026-11-18")))),
        ("前两天的工单", Some(("前两天", days("2026-11-12", "2026-11-18")))),
        ("发货前两天通知客户", None),
        ("the prior month", Some(("prior month", days("2026-10-01", "2026-10-31")))),
        ("prior year revenue", Some(("prior year", days("2025-01-01", "2025-12-31")))),
        // A count of weeks with no past or future word names no window.
        ("it takes a few weeks", None),
    ]);
}

#[test]
fn a_few_days_or_weeks_that_are_no_window_back() {
    check_wed(&[
        ("十几天前的工单", None),
        ("二十几天前下的单", None),
        ("合同到期的前几天会提醒吗", None),
        ("试用期的前两天免费吗", None),
        ("ETA前两天通知客户吗", None),
        ("the last few days of October", Some(("October", days("2026-10-01", "2026-10-31")))),
        ("the last few weeks of the quarter", None),
        ("the past few years", None),
        ("近几个季度", None),
    ]);
}

#[test]
fn chinese_week_numbers_that_name_no_iso_week() {
    for text in ["公司成立第10周年", "第2周期", "每月第2周例会", "满第3周岁"] {
        assert_eq!(mentioned(text, "2026-06-18"), Vec::new(), "{text}");
    }
    // A week number with no year more than half a year away names none.
    assert_eq!(mentioned("week 53", "2025-03-01"), Vec::new());
}
