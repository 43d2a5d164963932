//! Plain text from wiki snippets and pages: tags stripped, HTML entities decoded, DokuWiki
//! markup and Confluence `@@@hl@@@` highlight markers removed, whitespace collapsed, and
//! snippets cut to a bounded number of characters at a char boundary (CJK stays intact).

/// Longest snippet returned, in characters (not bytes).
pub const SNIPPET_MAX_CHARS: usize = 300;

/// Removes `<...>` tags. A `<` that does not open a tag (`a < b`) is kept. Block-level closing
/// tags and `<br>` become a newline so words of adjacent paragraphs do not run together.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let opens_tag =
            after.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!' || c == '?');
        match (opens_tag, after.find('>')) {
            (true, Some(end)) => {
                let tag = after[..end].trim_start_matches('/').to_ascii_lowercase();
                let name = tag.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("");
                if matches!(
                    name,
                    "br" | "p" | "div" | "li" | "tr" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "pre" | "table"
                ) {
                    out.push('\n');
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn named_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => " ",
        "hellip" => "…",
        "mdash" => "—",
        "ndash" => "–",
        "lsquo" => "‘",
        "rsquo" => "’",
        "ldquo" => "“",
        "rdquo" => "”",
        "middot" => "·",
        "bull" => "•",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "yen" => "¥",
        "euro" => "€",
        "laquo" => "«",
        "raquo" => "»",
        "times" => "×",
        _ => return None,
    })
}

/// Decodes HTML character references (`&quot;`, `&#26412;`, `&#x672C;`). Unknown named
/// references become a space (no entity junk in snippets); a bare `&` stays.
pub fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after.char_indices().take(32).find(|(_, c)| *c == ';').map(|(j, _)| j);
        let decoded = end.and_then(|end| {
            let name = &after[..end];
            let text = if let Some(num) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                u32::from_str_radix(num, 16).ok().and_then(char::from_u32).map(String::from)
            } else if let Some(num) = name.strip_prefix('#') {
                num.parse::<u32>().ok().and_then(char::from_u32).map(String::from)
            } else if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) {
                Some(named_entity(name).unwrap_or(" ").to_string())
            } else {
                None
            };
            text.map(|t| (t, end))
        });
        match decoded {
            Some((text, end)) => {
                out.push_str(if text == "\0" { " " } else { &text });
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Removes DokuWiki markup that leaks into search snippets: `====== headings ======`, `**bold**`,
/// `__underline__`, `''mono''`, `//italic//` (not `://`), list bullets, table separators,
/// `[[link|label]]` (keeps the label) and `{{media}}`.
pub fn strip_dokuwiki_markup(s: &str) -> String {
    let mut text = String::with_capacity(s.len());
    // links and media first
    let mut rest = s;
    while let Some(i) = rest.find("[[").into_iter().chain(rest.find("{{")).min() {
        text.push_str(&rest[..i]);
        let is_link = rest[i..].starts_with("[[");
        let close = if is_link { "]]" } else { "}}" };
        match rest[i + 2..].find(close) {
            Some(end) => {
                let inner = &rest[i + 2..i + 2 + end];
                if is_link {
                    text.push_str(inner.rsplit_once('|').map_or(inner, |(_, label)| label));
                }
                rest = &rest[i + 2 + end + 2..];
            }
            None => {
                text.push_str(&rest[i..i + 2]);
                rest = &rest[i + 2..];
            }
        }
    }
    text.push_str(rest);

    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut l = line.trim_start();
        if let Some(stripped) = l.strip_prefix("* ").or_else(|| l.strip_prefix("- "))
            && (line.starts_with("  ") || line.starts_with('\t'))
        {
            l = stripped;
        }
        let l = l.replace("**", "").replace("__", "").replace("''", "");
        let l = remove_italics(&l);
        let l: String = l.chars().map(|c| if c == '^' || c == '|' { ' ' } else { c }).collect();
        out.push_str(&trim_heading(&l));
        out.push('\n');
    }
    out
}

fn remove_italics(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("//") {
        let keep = out.ends_with(':') || rest[..i].ends_with(':');
        out.push_str(&rest[..i]);
        if keep {
            out.push_str("//");
        }
        rest = &rest[i + 2..];
    }
    out.push_str(rest);
    out
}

/// Runs of two or more `=` are heading markers.
fn trim_heading(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut run = 0usize;
    for c in s.chars() {
        if c == '=' {
            run += 1;
            continue;
        }
        if run == 1 {
            out.push('=');
        } else if run > 1 {
            out.push(' ');
        }
        run = 0;
        out.push(c);
    }
    if run == 1 {
        out.push('=');
    }
    out
}

/// Collapses every run of whitespace into one space and trims.
pub fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts `s` to at most `max` characters at a char boundary, ending with `…` when cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
    let mut out = s[..end].trim_end().to_string();
    out.push('…');
    out
}

/// DokuWiki markup as plain text on one line, its first `max` characters.
pub fn plain_text(markup: &str, max: usize) -> String {
    truncate_chars(&collapse_whitespace(&strip_dokuwiki_markup(markup)), max)
}

/// A DokuWiki search snippet (HTML with `<strong class="search_hit">`, escaped entities, raw
/// wiki markup) as bounded plain text.
pub fn dokuwiki_snippet(html: &str) -> String {
    plain_text(&decode_entities(&strip_tags(html)), SNIPPET_MAX_CHARS)
}

/// Confluence's highlight markers around matched words in `excerpt` and `title`.
const HL_START: &str = "@@@hl@@@";
const HL_END: &str = "@@@endhl@@@";

/// A Confluence excerpt or title (`@@@hl@@@` markers, HTML, entities) as bounded plain text.
pub fn confluence_snippet(excerpt: &str) -> String {
    truncate_chars(&confluence_plain(excerpt), SNIPPET_MAX_CHARS)
}

/// Confluence text without markers, tags or entities, whitespace collapsed, not truncated.
/// Excerpts can carry markup escaped once more (`&lt;b&gt;`), so tags are stripped again after
/// decoding.
pub fn confluence_plain(s: &str) -> String {
    let unmarked = s.replace(HL_END, "").replace(HL_START, "");
    collapse_whitespace(&strip_tags(&decode_entities(&strip_tags(&unmarked))))
}

/// A page body in HTML (Confluence storage format) as plain text with line breaks kept.
pub fn html_to_text(html: &str) -> String {
    let text = decode_entities(&strip_tags(html));
    let lines: Vec<String> = text.lines().map(collapse_whitespace).filter(|l| !l.is_empty()).collect();
    lines.join("\n")
}

/// True when `s` still looks like markup: a tag, an entity, or a highlight marker.
pub fn looks_dirty(s: &str) -> bool {
    let entity = s.match_indices('&').any(|(i, _)| {
        let after = &s[i + 1..];
        after.find(';').is_some_and(|end| {
            end > 0 && end < 10 && after[..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '#')
        })
    });
    entity || s.contains("<strong") || s.contains("</") || s.contains("@@@") || s.contains("====")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dokuwiki_snippet_is_clean_plain_text() {
        // as parsed from the recorded 02-search-zhifuchaoshi-alice response
        let html = "====== <strong class=\"search_hit\">支付超时</strong>处理手册 Payment Timeout Runbook ======\n\n\
            适用于客服 support 处理&quot;<strong class=\"search_hit\">支付超时</strong> / payment timeout&quot;类工单（例如订单付款失败、结账页面卡住）。\nFor suppo";
        let s = dokuwiki_snippet(html);
        assert_eq!(
            s,
            "支付超时处理手册 Payment Timeout Runbook 适用于客服 support 处理\"支付超时 / payment timeout\"类工单（例如订单付款失败、结账页面卡住）。 For suppo"
        );
        assert!(!looks_dirty(&s));
    }

    #[test]
    fn markup_links_lists_and_bold_are_removed() {
        let s = dokuwiki_snippet(
            "  * 非质量问题<strong class=\"search_hit\">拒收</strong>，收取 **拒收手续费 12 元**（rejection fee **¥12**）\n  * see [[public:return_policy|退货政策]] and //italic// http://x.example/a ^ a | b |",
        );
        assert_eq!(
            s,
            "非质量问题拒收，收取 拒收手续费 12 元（rejection fee ¥12） see 退货政策 and italic http://x.example/a a b"
        );
    }

    #[test]
    fn entities_are_decoded_and_junk_is_dropped() {
        assert_eq!(decode_entities("a &amp; b &lt;x&gt; &#26412;&#x672C; &bogus; AT&T &;"), "a & b <x> 本本   AT&T &;");
        assert_eq!(decode_entities("&#0;&#xFFFFFFFF;"), " &#xFFFFFFFF;");
        assert_eq!(strip_tags("a < b <b>bold</b><br/>next"), "a < b bold\nnext");
        assert_eq!(strip_tags("unclosed <b"), "unclosed <b");
    }

    #[test]
    fn truncation_counts_chars_and_keeps_cjk_whole() {
        let cjk = "退货政策".repeat(100);
        let cut = truncate_chars(&cjk, SNIPPET_MAX_CHARS);
        assert_eq!(cut.chars().count(), SNIPPET_MAX_CHARS);
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with("退货政策退货"));
        assert_eq!(truncate_chars("short", 300), "short");
        let s = dokuwiki_snippet(&format!("<strong>{}</strong>", "拒收".repeat(400)));
        assert!(s.chars().count() <= SNIPPET_MAX_CHARS);
    }

    #[test]
    fn confluence_excerpt_markers_and_html_are_removed() {
        let s = confluence_snippet(
            "Our @@@hl@@@refund@@@endhl@@@ policy &amp; the <b>¥12</b> @@@hl@@@拒收@@@endhl@@@ fee&hellip;",
        );
        assert_eq!(s, "Our refund policy & the ¥12 拒收 fee…");
        assert!(!looks_dirty(&s));
        assert_eq!(html_to_text("<p>One &amp; two</p><p>三</p>"), "One & two\n三");
    }

    #[test]
    fn dirty_text_is_detected() {
        assert!(looks_dirty("a &quot; b"));
        assert!(looks_dirty("<strong class=x>"));
        assert!(looks_dirty("@@@hl@@@x"));
        assert!(!looks_dirty("AT & T, 1 < 2"));
    }
}
