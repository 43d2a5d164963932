//! Duplicate-detection keys, computed once per hit when it arrives.
//!
//! Three keys, each an `Option<u64>` (a hash of the normalised text; `None` when the key does
//! not apply to the hit):
//!
//! - **url** — the canonical URL: scheme and host lower-cased (the `url` crate's parser), user
//!   info, fragment and default port dropped, one trailing `/` dropped from the path, tracking
//!   parameters (`utm_*`, `gclid`, `fbclid`, `msclkid`, `mc_cid`, `mc_eid`) removed and the
//!   remaining query parameters sorted. `http` and `https` stay distinct. A URL that does not
//!   parse as an absolute URL (empty, relative) gives no key: a relative path means nothing
//!   across sources. Non-hierarchical URLs (`mailto:`, `urn:`) compare as parsed, minus fragment.
//! - **title** — NFKC, lower-case, every run of non-alphanumeric characters turned into one
//!   space, trimmed. Only titles of at least [`MIN_TITLE_CHARS`] characters after normalisation
//!   get a key, so short generic titles ("README", "Home") never merge.
//! - **content** — the source's `content_fingerprint` when it supplies one (compared as an exact
//!   string, only with other supplied fingerprints); otherwise a hash of the snippet normalised
//!   like a title, when that is at least [`MIN_SNIPPET_CHARS`] characters long.
//!
//! False merges: a title or a snippet is evidence, not proof. Two different tickets titled
//! "Password reset link expired" or two documents built from the same template (identical first
//! paragraph) share a key. To limit this, [`crate::rank`] merges on title and snippet keys only
//! ACROSS sources (within one source, distinct ids are distinct documents — the source says so),
//! while URL and supplied fingerprints merge within a source too (two ids, one document). Nor
//! does a title or snippet shared with a third source join two documents of one source: a
//! group holds at most one document per source. Every merge is reported in the hit's
//! `duplicates` with the key that matched, so a wrong merge is visible.
//!
//! Hashes are 64-bit foldhash (its quality variant) with a fixed seed, deterministic across runs
//! of one build; keys are only compared within one fusion, never stored. A collision between two
//! different normalised strings has probability ~2^-64 per pair.

use std::hash::{BuildHasher, Hasher};

use foldhash::quality::{FixedState, FoldHasher};

use fedsearch_proto::types::SourceHit;
use unicode_normalization::UnicodeNormalization;

/// Normalised titles shorter than this (in chars) never merge.
pub const MIN_TITLE_CHARS: usize = 8;
/// Normalised snippets shorter than this (in chars) give no content key.
pub const MIN_SNIPPET_CHARS: usize = 40;

/// Query parameters dropped from canonical URLs (besides every `utm_*`).
const TRACKING_PARAMS: &[&str] = &["gclid", "fbclid", "msclkid", "mc_cid", "mc_eid"];

/// Which key matched two hits; also the `matched_on` label of a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Url,
    Title,
    Content,
}

impl KeyKind {
    /// The order in which keys are reported (`matched_on`).
    pub const ALL: [KeyKind; 3] = [KeyKind::Url, KeyKind::Title, KeyKind::Content];
    /// The order in which keys merge hits, strongest first: when two merges exclude each other,
    /// the stronger key wins (see [`crate::rank`], section 4).
    pub const MERGE_ORDER: [KeyKind; 3] = [KeyKind::Url, KeyKind::Content, KeyKind::Title];

    pub fn label(self) -> &'static str {
        match self {
            KeyKind::Url => "url",
            KeyKind::Title => "title",
            KeyKind::Content => "content",
        }
    }

    pub(crate) fn bit(self) -> u8 {
        match self {
            KeyKind::Url => 1,
            KeyKind::Title => 2,
            KeyKind::Content => 4,
        }
    }

    /// Whether hits of the same source may merge on this key (see the module doc).
    pub(crate) fn merges_within_source(self, keys: &Keys) -> bool {
        match self {
            KeyKind::Url => true,
            KeyKind::Title => false,
            KeyKind::Content => keys.content_supplied,
        }
    }
}

/// The keys of one hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keys {
    pub url: Option<u64>,
    pub title: Option<u64>,
    pub content: Option<u64>,
    /// The content key comes from a supplied `content_fingerprint` (not from the snippet).
    pub content_supplied: bool,
}

impl Keys {
    pub fn of(hit: &SourceHit) -> Self {
        let (content, content_supplied) = match hit.content_fingerprint.trim() {
            "" => (text_key(&hit.snippet, MIN_SNIPPET_CHARS, 1), false),
            fp => (Some(hash(2, fp)), true),
        };
        Keys { url: url_key(&hit.url), title: text_key(&hit.title, MIN_TITLE_CHARS, 0), content, content_supplied }
    }

    pub fn get(&self, kind: KeyKind) -> Option<u64> {
        match kind {
            KeyKind::Url => self.url,
            KeyKind::Title => self.title,
            KeyKind::Content => self.content,
        }
    }
}

/// The seed of every key hash (any fixed value: keys are compared within one fusion only).
const SEED: u64 = 0x6665_6473_6561_7263;

/// `domain` separates snippet hashes from supplied fingerprints in the content key space.
fn hash(domain: u8, s: &str) -> u64 {
    let mut h = FixedState::with_seed(SEED).build_hasher();
    h.write_u8(domain);
    h.write(s.as_bytes());
    h.finish()
}

/// A hash of a byte stream, written to the hasher in chunks of exactly [`Self::CHUNK`] bytes
/// (then the rest): the same bytes give the same hash whichever path produced them.
struct StreamHash {
    hasher: FoldHasher<'static>,
    /// Room for a chunk not yet full plus one block of ASCII input (see [`Self::push_ascii`]).
    buf: [u8; Self::CHUNK + Self::BLOCK + 2],
    len: usize,
}

impl StreamHash {
    const CHUNK: usize = 256;
    /// ASCII input collapsed per pass of [`Self::push_ascii`].
    const BLOCK: usize = 256;

    fn new(domain: u8) -> Self {
        let mut hasher = FixedState::with_seed(SEED).build_hasher();
        hasher.write_u8(domain);
        Self { hasher, buf: [0; Self::CHUNK + Self::BLOCK + 2], len: 0 }
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
        self.drain();
    }

    fn push_char(&mut self, c: char) {
        for &b in c.encode_utf8(&mut [0; 4]).as_bytes() {
            self.push(b);
        }
    }

    /// Hashes every full chunk, keeping the rest at the front.
    fn drain(&mut self) {
        while self.len >= Self::CHUNK {
            self.hasher.write(&self.buf[..Self::CHUNK]);
            self.buf.copy_within(Self::CHUNK..self.len, 0);
            self.len -= Self::CHUNK;
        }
    }

    /// Pushes ASCII `raw` lower-cased, each run of non-alphanumeric bytes as one space, none at
    /// either end; returns how many bytes (= chars) it pushed. Without a branch per byte: each
    /// byte stores two bytes (space and letter, or letter and junk) and advances past what it
    /// emits.
    fn push_ascii(&mut self, raw: &[u8]) -> usize {
        let (mut pushed, mut prev_alnum, mut started) = (0, true, false);
        for block in raw.chunks(Self::BLOCK) {
            let (buf, mut len) = (&mut self.buf, self.len);
            let before = len;
            for &b in block {
                let lower = ASCII_ALNUM_LOWER[usize::from(b & 0x7f)];
                let alnum = lower != 0;
                let space = alnum & !prev_alnum & started;
                let pair = if space { [b' ', lower] } else { [lower, 0] };
                buf[len..len + 2].copy_from_slice(&pair);
                len += usize::from(space) + usize::from(alnum);
                started |= alnum;
                prev_alnum = alnum;
            }
            pushed += len - before;
            self.len = len;
            self.drain();
        }
        pushed
    }

    fn finish(mut self) -> u64 {
        self.hasher.write(&self.buf[..self.len]);
        self.hasher.finish()
    }
}

/// An ASCII byte's lower-case form when it is alphanumeric, else 0.
const ASCII_ALNUM_LOWER: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        if (b as u8).is_ascii_alphanumeric() {
            table[b] = (b as u8).to_ascii_lowercase();
        }
        b += 1;
    }
    table
};

/// The url key: the hash of [`canonical_url`]. URLs of the common shape (`http`/`https`, a
/// plain host name, printable ASCII, no dot segments, query parameters of unreserved bytes) are
/// canonicalised here without the `url` crate's parser and its allocations; the result is the
/// same string (a proptest checks it), anything else goes through [`canonical_url`].
fn url_key(raw: &str) -> Option<u64> {
    let raw = raw.trim();
    let mut buf = CanonicalBuf { bytes: [0; CanonicalBuf::CAP], len: 0 };
    match fast_canonical_url(raw, &mut buf).and_then(|()| std::str::from_utf8(&buf.bytes[..buf.len]).ok()) {
        Some(canonical) => Some(hash(0, canonical)),
        None => canonical_url(raw).map(|u| hash(0, &u)),
    }
}

/// A canonical URL written on the stack; `None` from `push` when it does not fit.
struct CanonicalBuf {
    bytes: [u8; Self::CAP],
    len: usize,
}

impl CanonicalBuf {
    const CAP: usize = 512;

    fn push(&mut self, s: &[u8]) -> Option<()> {
        let end = self.len.checked_add(s.len()).filter(|&e| e <= Self::CAP)?;
        self.bytes[self.len..end].copy_from_slice(s);
        self.len = end;
        Some(())
    }
}

/// Most query parameters the fast path sorts on the stack.
const FAST_MAX_PARAMS: usize = 16;

/// [`canonical_url`] for the common shape (see [`url_key`]) written into `out`; `None` when
/// `raw` is not of that shape (the caller then asks the `url` crate).
fn fast_canonical_url(raw: &str, out: &mut CanonicalBuf) -> Option<()> {
    let b = raw.as_bytes();
    // Printable ASCII only: the parser strips tabs and newlines anywhere, and treats `\` as `/`.
    if !b.iter().all(|&c| (0x21..0x7f).contains(&c) && c != b'\\') {
        return None;
    }
    let (scheme, default_port, rest) = if b.len() >= 8 && b[..8].eq_ignore_ascii_case(b"https://") {
        ("https", 443, &raw[8..])
    } else if b.len() >= 7 && b[..7].eq_ignore_ascii_case(b"http://") {
        ("http", 80, &raw[7..])
    } else {
        return None;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    // A plain host name: labels of letters, digits and inner hyphens, the last starting with a
    // letter (so never an IPv4 number), no IDNA (`xn--`). User info, IPv6 and the rest: slow path.
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
            && !l.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
    };
    if !host.split('.').all(label_ok) || !host.rsplit('.').next()?.as_bytes()[0].is_ascii_alphabetic() {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) if (1..=5).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()) => {
            let n: u32 = p.parse().ok()?;
            if n > 65_535 {
                return None;
            }
            (n != default_port).then_some(n)
        }
        Some(_) => return None,
    };
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (path, rest) = rest.split_at(path_end);
    let path_byte_ok = |c: u8| c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&c);
    let dot_segment = |seg: &str| seg == "." || seg == "..";
    if !path.bytes().all(path_byte_ok)
        || path.split('/').any(dot_segment)
        || path.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1] == b'2' && (w[2] | 0x20) == b'e')
    {
        return None;
    }
    let query = match rest.strip_prefix('?') {
        Some(q) => &q[..q.find('#').unwrap_or(q.len())],
        None => "",
    };
    let mut params: [(&str, &str); FAST_MAX_PARAMS] = [("", ""); FAST_MAX_PARAMS];
    let mut n = 0;
    for piece in query.split('&').filter(|p| !p.is_empty()) {
        // Unreserved bytes only: form decoding and encoding give them back unchanged.
        if !piece.bytes().all(|c| c.is_ascii_alphanumeric() || b"-._*=".contains(&c)) {
            return None;
        }
        let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
        if v.contains('=') {
            return None;
        }
        let lower = |k: &str, m: &str| k.eq_ignore_ascii_case(m);
        if (k.len() >= 4 && lower(&k[..4], "utm_")) || TRACKING_PARAMS.iter().any(|m| lower(k, m)) {
            continue;
        }
        *params.get_mut(n)? = (k, v);
        n += 1;
    }
    out.push(scheme.as_bytes())?;
    out.push(b"://")?;
    let start = out.len;
    out.push(host.as_bytes())?;
    out.bytes[start..out.len].make_ascii_lowercase();
    if let Some(port) = port {
        out.push(b":")?;
        out.push(port.to_string().as_bytes())?;
    }
    out.push(path.strip_suffix('/').unwrap_or(path).as_bytes())?;
    let params = &mut params[..n];
    params.sort_unstable();
    for (i, (k, v)) in params.iter().enumerate() {
        out.push(if i == 0 { b"?" } else { b"&" })?;
        out.push(k.as_bytes())?;
        out.push(b"=")?;
        out.push(v.as_bytes())?;
    }
    Some(())
}

/// The canonical form of an absolute URL (see the module doc), `None` when it does not parse.
pub fn canonical_url(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw.trim()).ok()?;
    if url.cannot_be_a_base() {
        // mailto:, urn:, data: ... compare as parsed.
        let mut s = url.to_string();
        if let Some(i) = s.find('#') {
            s.truncate(i);
        }
        return Some(s);
    }
    let mut out = String::with_capacity(raw.len());
    out.push_str(url.scheme());
    out.push_str("://");
    if let Some(host) = url.host_str() {
        out.push_str(&host.to_lowercase());
    }
    if let Some(port) = url.port() {
        // `port()` is already `None` for the scheme's default port.
        out.push(':');
        out.push_str(&port.to_string());
    }
    let path = url.path();
    out.push_str(path.strip_suffix('/').unwrap_or(path));
    let mut params: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            !k.starts_with("utm_") && !TRACKING_PARAMS.contains(&k.as_str())
        })
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if !params.is_empty() {
        params.sort();
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
        out.push('?');
        out.push_str(&query);
    }
    Some(out)
}

/// NFKC, lower-case, non-alphanumeric runs → one space, trimmed; `None` when shorter than
/// `min_chars`.
pub fn normalise_text(raw: &str, min_chars: usize) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let chars = normalised_chars(raw, |c| out.push(c));
    (chars >= min_chars).then_some(out)
}

/// The [`StreamHash`] of [`normalise_text`]`(raw)` without building the string (the hot path:
/// one call per title and per snippet).
fn text_key(raw: &str, min_chars: usize, domain: u8) -> Option<u64> {
    let mut h = StreamHash::new(domain);
    let chars = if raw.is_ascii() {
        // ASCII is its own NFKC form and one byte per char (the common case).
        h.push_ascii(raw.as_bytes())
    } else {
        normalised_chars(raw, |c| h.push_char(c))
    };
    (chars >= min_chars).then(|| h.finish())
}

/// Feeds the normalised form of `raw` to `emit` char by char; returns how many chars it fed.
fn normalised_chars(raw: &str, emit: impl FnMut(char)) -> usize {
    if raw.is_ascii() {
        // ASCII is NFKC-invariant: skip the normaliser (the common case).
        collapse(raw.bytes().map(|b| char::from(b.to_ascii_lowercase())), emit)
    } else {
        collapse(raw.nfkc().flat_map(char::to_lowercase), emit)
    }
}

fn collapse(text: impl Iterator<Item = char>, mut emit: impl FnMut(char)) -> usize {
    let mut chars = 0usize;
    let mut pending_space = false;
    for c in text {
        if c.is_alphanumeric() {
            if pending_space && chars > 0 {
                emit(' ');
                chars += 1;
            }
            pending_space = false;
            emit(c);
            chars += 1;
        } else {
            pending_space = true;
        }
    }
    chars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_hash(domain: u8, text: &str) -> u64 {
        let mut h = StreamHash::new(domain);
        text.bytes().for_each(|b| h.push(b));
        h.finish()
    }

    fn slow_url_key(raw: &str) -> Option<u64> {
        canonical_url(raw).map(|u| hash(0, &u))
    }

    #[test]
    fn the_fast_url_key_is_the_hash_of_the_canonical_url() {
        for raw in [
            "https://Intranet.Example.com/docs/a/?utm_source=search#top",
            "https://intranet.example.com:443/docs/a",
            "HTTP://h.example:0080/x/?b=2&a=1&a=0&gclid=x&UTM_x=1&&c",
            "https://h.example/x?k=v=w",
            "https://h.example/a/./b/../c",
            "https://h.example/%2E%2e/c",
            "https://h.example/a%20b/c?q=a+b",
            "https://xn--bcher-kva.example/x",
            "https://10.0.0.1/x",
            "https://0x7f.1/x",
            "https://user:pw@h.example/x",
            "https://h.example:99999/x",
            "https://h.example:/x",
            "https://-h.example/x",
            "https://h..example/x",
            "https://h.example./x",
            "https:///h.example/x",
            "https://h.example\\x",
            "mailto:someone@example.com#x",
            "ftp://h.example/x",
            "/relative/path",
            "",
        ] {
            assert_eq!(url_key(raw), slow_url_key(raw), "{raw}");
        }
        let mut buf = CanonicalBuf { bytes: [0; CanonicalBuf::CAP], len: 0 };
        assert!(
            fast_canonical_url("https://Intranet.Example.com:8443/docs/a/?z=1&utm_source=s&a=2#top", &mut buf)
                .is_some()
        );
        assert_eq!(
            std::str::from_utf8(&buf.bytes[..buf.len]).unwrap(),
            "https://intranet.example.com:8443/docs/a?a=2&z=1"
        );
    }

    proptest::proptest! {
        #[test]
        fn fast_and_parsed_url_keys_agree(
            // Mostly URLs of the fast path's shape, some of every other kind.
            scheme in "(?i:https?)|(?i:https?)|(?i:https?)|ftp|mailto",
            slashes in "//|//|//|///|/|",
            user in "|||[a-z]{1,4}@",
            host in "[a-zA-Z0-9-]{1,8}(\\.[a-zA-Z0-9-]{0,8}){0,3}|[0-9]{1,3}(\\.[0-9]{1,3}){3}",
            port in "|:[0-9]{0,6}",
            path in "(/[a-zA-Z0-9._~%+!$'()*,;=:@ -]{0,6}){0,4}/?",
            query in "|\\?([a-zA-Z0-9_.*=%+'-]{0,6}&?){0,5}",
            fragment in "|#[ -~]{0,8}",
        ) {
            let raw = format!("{scheme}:{slashes}{user}{host}{port}{path}{query}{fragment}");
            proptest::prop_assert_eq!(url_key(&raw), slow_url_key(&raw), "{}", raw);
        }

        #[test]
        fn text_key_is_the_hash_of_the_normalised_text(raw in "[ -~]{0,120}|[ -~]{200,700}|\\PC{0,60}|\\PC{100,300}") {
            let expected = normalise_text(&raw, 8).map(|n| stream_hash(0, &n));
            proptest::prop_assert_eq!(text_key(&raw, 8, 0), expected);
        }
    }

    #[test]
    fn url_variants_share_one_canonical_form() {
        let want = canonical_url("https://wiki.example.com/page?a=1&b=2").unwrap();
        for variant in [
            "HTTPS://Wiki.Example.COM/page?b=2&a=1",
            "https://wiki.example.com:443/page/?a=1&b=2#section-3",
            "https://wiki.example.com/page?utm_source=x&a=1&utm_campaign=y&b=2",
            "https://user:pw@wiki.example.com/page?a=1&gclid=abc&b=2",
            "  https://wiki.example.com/page?a=1&b=2  ",
        ] {
            assert_eq!(canonical_url(variant).unwrap(), want, "{variant}");
        }
        assert_eq!(want, "https://wiki.example.com/page?a=1&b=2");
        assert_eq!(canonical_url("http://h.example/").unwrap(), "http://h.example");
        assert_eq!(canonical_url("http://h.example:8080/x").unwrap(), "http://h.example:8080/x");
    }

    #[test]
    fn different_urls_and_relative_urls_do_not_share_a_key() {
        assert_ne!(canonical_url("https://a.example/x"), canonical_url("https://a.example/y"));
        assert_ne!(canonical_url("https://a.example/x?id=1"), canonical_url("https://a.example/x?id=2"));
        assert_ne!(canonical_url("http://a.example/x"), canonical_url("https://a.example/x"));
        assert_eq!(canonical_url("/wiki/page"), None);
        assert_eq!(canonical_url(""), None);
    }

    #[test]
    fn titles_normalise_case_punctuation_width_and_space() {
        let a = normalise_text("VPN  setup — Guide!", 8).unwrap();
        assert_eq!(a, "vpn setup guide");
        assert_eq!(normalise_text("vpn setup: guide", 8).unwrap(), a);
        // Full-width letters fold under NFKC.
        assert_eq!(normalise_text("ＶＰＮ setup guide", 8).unwrap(), a);
        assert_eq!(normalise_text("README", 8), None);
        assert_eq!(normalise_text("  !!  ", 1), None);
        // CJK is kept (alphanumeric), counted in chars, not bytes.
        assert_eq!(normalise_text("東京オフィスの入館手順", 8).unwrap(), "東京オフィスの入館手順");
    }

    #[test]
    fn text_keys_hash_the_normalised_text() {
        let long = "Ünïcödé title — ".repeat(10);
        for raw in ["VPN setup guide", "vpn: SETUP guide!", "ＶＰＮ setup guide", long.as_str()] {
            let expected = stream_hash(0, &normalise_text(raw, 8).unwrap());
            assert_eq!(text_key(raw, 8, 0), Some(expected), "{raw}");
        }
        assert_eq!(text_key("VPN setup guide", 8, 0), text_key("ＶＰＮ setup guide", 8, 0));
        // Longer than one hash chunk: the ASCII and the NFKC path still give one key.
        let (ascii, wide) = ("VPN setup guide, ".repeat(40), "ＶＰＮ setup guide, ".repeat(40));
        assert!(normalise_text(&ascii, 8).unwrap().len() > 2 * StreamHash::CHUNK);
        assert_eq!(text_key(&ascii, 8, 0), text_key(&wide, 8, 0));
        assert_eq!(text_key("README", 8, 0), None);
    }

    #[test]
    fn content_key_prefers_the_supplied_fingerprint() {
        let snippet = "the quarterly close checklist lists every step finance runs at month end";
        let a = SourceHit { snippet: snippet.into(), ..Default::default() };
        let b = SourceHit { snippet: snippet.to_uppercase(), ..Default::default() };
        assert_eq!(Keys::of(&a).content, Keys::of(&b).content);
        assert!(Keys::of(&a).content.is_some());
        let short = SourceHit { snippet: "too short".into(), ..Default::default() };
        assert_eq!(Keys::of(&short).content, None);
        let fp = SourceHit { snippet: snippet.into(), content_fingerprint: "sha256:ab".into(), ..Default::default() };
        assert_ne!(Keys::of(&fp).content, Keys::of(&a).content);
        assert!(Keys::of(&fp).content_supplied);
    }
}
