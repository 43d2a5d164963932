//! XML-RPC messages: building a `<methodCall>` with string and int parameters and parsing a
//! `<methodResponse>` into a [`Value`] tree (quick-xml, no network code here). Every string the
//! caller passes is XML-escaped; characters XML 1.0 cannot carry (control characters, U+FFFE,
//! U+FFFF — DokuWiki answers those with fault -32700) are dropped.

use std::collections::BTreeMap;

use quick_xml::{Reader, events::Event};

/// One XML-RPC value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(String),
    Int(i64),
    Bool(bool),
    Double(f64),
    /// `dateTime.iso8601`, as sent (DokuWiki sends RFC 3339, the spec `20261020T15:15:12`).
    DateTime(String),
    /// `base64`, still encoded.
    Base64(String),
    Struct(BTreeMap<String, Value>),
    Array(Vec<Value>),
    Nil,
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) | Value::DateTime(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A struct member, if this is a struct.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Struct(m) => m.get(key),
            _ => None,
        }
    }

    /// An empty `<struct>`: how DokuWiki 2022 answers an unknown method, a wrong argument count,
    /// a missing page in `wiki.getPageInfo` and a refused call (with HTTP 401/403), all without
    /// a `<fault>`.
    pub fn is_empty_struct(&self) -> bool {
        matches!(self, Value::Struct(m) if m.is_empty())
    }
}

/// What a `<methodResponse>` carried.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Value(Value),
    Fault { code: i64, message: String },
}

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed xml-rpc response: {0}")]
pub struct ParseError(String);

fn xml_text(s: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| (!c.is_control() || matches!(c, '\t' | '\n' | '\r')) && !matches!(c, '\u{FFFE}' | '\u{FFFF}'))
        .collect();
    quick_xml::escape::escape(kept.as_str()).into_owned()
}

/// One parameter of a `<methodCall>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param<'a> {
    Str(&'a str),
    Int(i32),
}

/// A `<methodCall>` of `method` with string and int parameters.
pub fn method_call(method: &str, params: &[Param<'_>]) -> String {
    let mut out = String::with_capacity(
        128 + params.iter().map(|p| if let Param::Str(s) = p { s.len() } else { 12 }).sum::<usize>(),
    );
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<methodCall><methodName>");
    out.push_str(&xml_text(method));
    out.push_str("</methodName><params>");
    for p in params {
        match p {
            Param::Str(s) => {
                out.push_str("<param><value><string>");
                out.push_str(&xml_text(s));
                out.push_str("</string></value></param>");
            }
            Param::Int(i) => out.push_str(&format!("<param><value><int>{i}</int></value></param>")),
        }
    }
    out.push_str("</params></methodCall>");
    out
}

/// A minimal element tree: XML-RPC needs nothing more.
#[derive(Debug, Default)]
struct Element {
    name: String,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// Nesting deeper than this is refused (a hostile or broken server cannot blow the stack).
const MAX_DEPTH: usize = 64;

fn parse_tree(xml: &str) -> Result<Element, ParseError> {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<Element> = vec![Element::default()];
    loop {
        let event = reader.read_event().map_err(|e| ParseError(format!("not well-formed xml ({e})")))?;
        match event {
            Event::Start(start) => {
                if stack.len() > MAX_DEPTH {
                    return Err(ParseError("nested too deeply".into()));
                }
                let name = start.local_name().as_ref().to_string();
                stack.push(Element { name, ..Default::default() });
            }
            Event::Empty(start) => {
                let name = start.local_name().as_ref().to_string();
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(Element { name, ..Default::default() });
                }
            }
            Event::End(_) => {
                let done = stack.pop().ok_or_else(|| ParseError("unbalanced tags".into()))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Err(ParseError("unbalanced tags".into())),
                }
            }
            Event::Text(t) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => quick_xml::escape::resolve_xml_entity(&r)
                        .ok_or_else(|| ParseError(format!("unknown entity &{};", &*r)))?
                        .to_string(),
                    Err(_) => return Err(ParseError("bad character reference".into())),
                };
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&resolved);
                }
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if stack.len() != 1 {
        return Err(ParseError("unexpected end of document".into()));
    }
    let root = stack.pop().unwrap_or_default();
    root.children
        .into_iter()
        .find(|c| c.name == "methodResponse")
        .ok_or_else(|| ParseError("no <methodResponse>".into()))
}

fn value(el: &Element) -> Result<Value, ParseError> {
    let Some(typed) = el.children.first() else {
        // `<value>text</value>` without a type element is a string.
        return Ok(Value::String(el.text.clone()));
    };
    let text = typed.text.as_str();
    Ok(match typed.name.as_str() {
        "string" => Value::String(text.to_string()),
        "int" | "i4" | "i8" => Value::Int(text.trim().parse().map_err(|_| ParseError("bad <int>".into()))?),
        "boolean" => Value::Bool(text.trim() == "1"),
        "double" => Value::Double(text.trim().parse().map_err(|_| ParseError("bad <double>".into()))?),
        "dateTime.iso8601" => Value::DateTime(text.trim().to_string()),
        "base64" => Value::Base64(text.trim().to_string()),
        "nil" => Value::Nil,
        "struct" => {
            let mut members = BTreeMap::new();
            for m in typed.children.iter().filter(|c| c.name == "member") {
                let name = m
                    .child("name")
                    .map(|n| n.text.clone())
                    .ok_or_else(|| ParseError("member without <name>".into()))?;
                let v = m.child("value").map(value).transpose()?.unwrap_or(Value::Nil);
                members.insert(name, v);
            }
            Value::Struct(members)
        }
        "array" => {
            let data = typed.child("data").ok_or_else(|| ParseError("array without <data>".into()))?;
            Value::Array(data.children.iter().filter(|c| c.name == "value").map(value).collect::<Result<_, _>>()?)
        }
        other => return Err(ParseError(format!("unknown value type <{other}>"))),
    })
}

/// Parses a `<methodResponse>`: its one parameter, or its fault.
pub fn parse_response(xml: &str) -> Result<Response, ParseError> {
    let root = parse_tree(xml)?;
    if let Some(fault) = root.child("fault") {
        let v = fault.child("value").map(value).transpose()?.unwrap_or(Value::Nil);
        let code = v.get("faultCode").and_then(Value::as_i64).unwrap_or(0);
        let message = v.get("faultString").and_then(Value::as_str).unwrap_or_default().to_string();
        return Ok(Response::Fault { code, message });
    }
    let param = root
        .child("params")
        .and_then(|p| p.child("param"))
        .and_then(|p| p.child("value"))
        .ok_or_else(|| ParseError("no <params><param><value>".into()))?;
    Ok(Response::Value(value(param)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample/wiki/xmlrpc-examples");

    fn example(name: &str) -> String {
        std::fs::read_to_string(format!("{EXAMPLES}/{name}")).expect("recorded example exists")
    }

    #[test]
    fn method_call_escapes_and_matches_the_recorded_request() {
        let call = method_call("dokuwiki.search", &[Param::Str("支付超时")]);
        let recorded = example("02-search-zhifuchaoshi-alice.request.xml");
        let body = |s: &str| s[s.find("<methodCall>").unwrap()..].trim().to_string();
        assert_eq!(body(&call), body(&recorded));
        let hostile = method_call("dokuwiki.search", &[Param::Str("</string><script>&\"x\u{1}\u{FFFF}\u{FFFE}")]);
        assert!(hostile.contains("&lt;/string&gt;&lt;script&gt;&amp;&quot;x</string>"), "{hostile}");
        assert_eq!(hostile.matches("<string>").count(), 1);
        let versions = method_call("wiki.getPageVersions", &[Param::Str("public:p"), Param::Int(20)]);
        assert!(versions.ends_with("<string>public:p</string></value></param><param><value><int>20</int></value></param></params></methodCall>"), "{versions}");
    }

    #[test]
    fn parses_a_recorded_search_response_with_double_escaped_snippets() {
        let Response::Value(Value::Array(items)) =
            parse_response(&example("02-search-zhifuchaoshi-alice.response.xml")).unwrap()
        else {
            panic!("expected an array")
        };
        assert_eq!(items.len(), 1);
        let hit = &items[0];
        assert_eq!(hit.get("id").and_then(Value::as_str), Some("support:runbook_payment_timeout"));
        assert_eq!(hit.get("score").and_then(Value::as_i64), Some(21));
        // timestamps depend on when the examples were recorded: mtime == rev, a plausible epoch
        let mtime = hit.get("mtime").and_then(Value::as_i64).unwrap();
        assert_eq!(Some(mtime), hit.get("rev").and_then(Value::as_i64));
        assert!(mtime > 1_700_000_000, "{mtime}");
        let snippet = hit.get("snippet").and_then(Value::as_str).unwrap();
        assert!(snippet.contains("<strong class=\"search_hit\">支付超时</strong>"), "{snippet}");
        assert!(snippet.contains("&quot;"), "html entities stay for the snippet cleaner: {snippet}");
    }

    #[test]
    fn parses_page_info_fault_and_empty_struct() {
        let Response::Value(info) =
            parse_response(&example("08-getPageInfo-return-policy-carol.response.xml")).unwrap()
        else {
            panic!()
        };
        let modified = info.get("lastModified").and_then(Value::as_str).unwrap();
        assert!(matches!(info.get("lastModified"), Some(Value::DateTime(_))));
        assert!(fedsearch_core::time::parse_rfc3339(modified).is_some(), "{modified}");
        assert_eq!(info.get("author").and_then(Value::as_str), Some("carol"));
        let Response::Value(empty) = parse_response(&example("15-unknown-method-200.response.xml")).unwrap() else {
            panic!()
        };
        assert!(empty.is_empty_struct());
        assert_eq!(
            parse_response(&example("17-malformed-xml-fault.response.xml")).unwrap(),
            Response::Fault { code: -32700, message: "parse error. not well formed".into() }
        );
        let Response::Value(text) = parse_response(&example("09-getPage-missing-carol.response.xml")).unwrap() else {
            panic!()
        };
        assert_eq!(text, Value::String(String::new()));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            "",
            "not xml",
            "<methodResponse>",
            "<methodResponse><params></params></methodResponse>",
            "<a></b>",
            "<methodResponse><params><param><value><int>x</int></value></param></params></methodResponse>",
        ] {
            assert!(parse_response(bad).is_err(), "{bad}");
        }
        let deep = format!("<methodResponse>{}{}</methodResponse>", "<a>".repeat(200), "</a>".repeat(200));
        assert!(parse_response(&deep).is_err());
    }
}
