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
//!
//! Lazy title and snippet keys: inside a fusion, a title or snippet whose normalised form is
//! longer than [`PREFIX_BYTES`] is first keyed on its first [`PREFIX_BYTES`] bytes only (a
//! *prefix key*, in a hash domain of its own; `Keys::lazy`); the full key is computed when a
//! second hit has the same prefix key (`rank::KeyTable`, in arrival). Most hits share no
//! prefix with another, and their snippets are read no further than the prefix. The merges are
//! exactly those of the full keys: equal normalised texts have equal prefixes, and a prefix key
//! no other hit holds matches nothing. [`Keys::of`] gives the full keys.

use std::hash::{BuildHasher, Hasher};

use foldhash::quality::{FixedState, FoldHasher};

use fedsearch_proto::types::SourceHit;
use unicode_normalization::UnicodeNormalization;

use crate::swar;

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

    /// [`Keys::of`], except that a title or snippet whose normalised form is longer than
    /// [`PREFIX_BYTES`] gets a **prefix key** (the hash of its first [`PREFIX_BYTES`] bytes, in
    /// a hash domain of its own) instead of its key; the second value says which kinds (their
    /// [`KeyKind::bit`]). Most hits share no prefix with any other, and hashing a prefix reads
    /// a fraction of a snippet. Exact: two texts with one normalised form share its prefix, so
    /// [`crate::rank`] computes the full key ([`Keys::full`]) of every hit whose prefix key
    /// another hit also has, and a prefix key no other hit has matches nothing, as its full key
    /// would not.
    pub(crate) fn lazy(hit: &SourceHit) -> (Self, u8) {
        let (content, content_supplied, content_partial) = match hit.content_fingerprint.trim() {
            "" => match prefix_key(&hit.snippet, MIN_SNIPPET_CHARS, 1) {
                Prefix::Complete(key) => (key, false, 0),
                Prefix::Partial(key) => (Some(key), false, KeyKind::Content.bit()),
            },
            fp => (Some(hash(2, fp)), true, 0),
        };
        let (title, title_partial) = match prefix_key(&hit.title, MIN_TITLE_CHARS, 0) {
            Prefix::Complete(key) => (key, 0),
            Prefix::Partial(key) => (Some(key), KeyKind::Title.bit()),
        };
        (Keys { url: url_key(&hit.url), title, content, content_supplied }, title_partial | content_partial)
    }

    /// The full key of `kind` (title or content) of `hit`, whose [`Keys::lazy`] was a prefix key.
    pub(crate) fn full(hit: &SourceHit, kind: KeyKind) -> Option<u64> {
        match kind {
            KeyKind::Title => text_key(&hit.title, MIN_TITLE_CHARS, 0),
            KeyKind::Content => text_key(&hit.snippet, MIN_SNIPPET_CHARS, 1),
            KeyKind::Url => url_key(&hit.url),
        }
    }

    pub(crate) fn set(&mut self, kind: KeyKind, key: Option<u64>) {
        match kind {
            KeyKind::Url => self.url = key,
            KeyKind::Title => self.title = key,
            KeyKind::Content => self.content = key,
        }
    }
}

/// Normalised titles and snippets longer than this (in bytes) first get a prefix key (see
/// the module doc). Shorter than [`MIN_SNIPPET_CHARS`]: a snippet of 33 to 39 chars has a
/// prefix key though it has no key, which changes nothing — its prefix key either matches no
/// other hit's, or is replaced by its full key (`None`). Shorter than a hash chunk of the
/// stream hash, so that a text that fits is hashed as its full key is.
pub const PREFIX_BYTES: usize = 32;
const _: () = assert!(PREFIX_BYTES < StreamHash::CHUNK);

/// Hash domains of prefix keys: the text's domain plus this.
const PREFIX_DOMAIN: u8 = 0x80;

/// What [`prefix_key`] found.
enum Prefix {
    /// The normalised text is at most [`PREFIX_BYTES`] long (or not ASCII): its [`text_key`].
    Complete(Option<u64>),
    /// The hash of the first [`PREFIX_BYTES`] bytes of the longer normalised text.
    Partial(u64),
}

/// The prefix key of `raw` (see [`Keys::lazy`]). ASCII text is normalised only as far as
/// [`PREFIX_BYTES`] + 1 bytes of output; other text gets its full key.
fn prefix_key(raw: &str, min_chars: usize, domain: u8) -> Prefix {
    if !raw.is_ascii() {
        return Prefix::Complete(text_key(raw, min_chars, domain));
    }
    let mut buf = [0u8; PREFIX_BYTES + 2];
    match normalise_ascii(raw.as_bytes(), &mut buf) {
        // The whole text, shorter than a hash chunk: what `text_key`'s stream hash writes.
        Some(len) => Prefix::Complete((len >= min_chars).then(|| hash_bytes(domain, &buf[..len]))),
        None => Prefix::Partial(hash_bytes(domain | PREFIX_DOMAIN, &buf[..PREFIX_BYTES])),
    }
}

/// Writes the normalised form of ASCII `raw` (lower-case, each run of non-alphanumeric bytes
/// as one space, none at either end) into `buf`; returns its length, or `None` when it is
/// longer than `buf.len() - 2` (then `buf` holds its first `buf.len() - 2` bytes at least).
///
/// Eight bytes at a time ([`crate::swar`]): letters and digits lower-cased, other bytes spaces,
/// then the word's leading separators dropped (one space written before it instead when it
/// follows a letter or digit), the second of two adjacent separators dropped (rare), and a
/// trailing one left pending.
fn normalise_ascii(raw: &[u8], buf: &mut [u8]) -> Option<usize> {
    let limit = buf.len() - 2;
    let (mut len, mut pending) = (0, false);
    let mut words = raw.chunks_exact(8);
    for (i, word) in words.by_ref().enumerate() {
        if len + 9 > buf.len() {
            // No room for a space and eight bytes: the rest byte by byte.
            return normalise_bytes(&raw[8 * i..], buf, len, &mut pending);
        }
        let x = swar::load(word);
        let (upper, alnum) = swar::upper_and_alnum(x);
        let mut sep = !alnum & swar::HIGH;
        let mut out = ((x | (upper >> 2)) & ((alnum >> 7) * 0xff)) | ((sep >> 7) * 0x20);
        let lead = alnum.trailing_zeros() / 8;
        if lead == 8 {
            pending = true;
            continue;
        }
        let mut count = 8 - lead as usize;
        if lead > 0 {
            (out, sep) = (out >> (8 * lead), sep >> (8 * lead));
            pending = true;
        }
        // Byte 0 is a letter or digit now; drop the second of each pair of separators.
        loop {
            let pair = sep & (sep << 8);
            if pair == 0 {
                break;
            }
            let low = (1u64 << (pair.trailing_zeros() & !7)) - 1;
            out = (out & low) | ((out >> 8) & !low);
            sep = (sep & low) | ((sep >> 8) & !low);
            count -= 1;
        }
        if pending && len > 0 {
            buf[len] = b' ';
            len += 1;
        }
        buf[len..len + 8].copy_from_slice(&out.to_le_bytes());
        // A trailing separator is a space only if a letter or digit follows.
        pending = (sep >> (8 * count - 1)) & 1 == 1;
        len += count - usize::from(pending);
        if len > limit {
            return None;
        }
    }
    normalise_bytes(words.remainder(), buf, len, &mut pending)
}

/// [`normalise_ascii`] byte by byte from `len` bytes written; `pending`: a separator was read
/// since the last letter or digit. `None` past `buf.len() - 2` bytes.
fn normalise_bytes(raw: &[u8], buf: &mut [u8], mut len: usize, pending: &mut bool) -> Option<usize> {
    let limit = buf.len() - 2;
    for &b in raw {
        let lower = ASCII_ALNUM_LOWER[usize::from(b & 0x7f)];
        if lower == 0 {
            *pending = true;
            continue;
        }
        if *pending && len > 0 {
            buf[len] = b' ';
            len += 1;
        }
        *pending = false;
        buf[len] = lower;
        len += 1;
        if len > limit {
            return None;
        }
    }
    Some(len)
}

/// The seed of every key hash (any fixed value: keys are compared within one fusion only).
const SEED: u64 = 0x6665_6473_6561_7263;

/// `domain` separates snippet hashes from supplied fingerprints in the content key space.
fn hash(domain: u8, s: &str) -> u64 {
    hash_bytes(domain, s.as_bytes())
}

fn hash_bytes(domain: u8, bytes: &[u8]) -> u64 {
    let mut h = FixedState::with_seed(SEED).build_hasher();
    h.write_u8(domain);
    h.write(bytes);
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
    match fast_canonical_url(raw, &mut buf) {
        Some(()) => Some(hash_bytes(0, &buf.bytes[..buf.len])),
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

/// Byte classes of the URL fast path ([`URL_CLASS`]).
const HOST_BYTE: u8 = 1;
const PATH_BYTE: u8 = 2;
const QUERY_BYTE: u8 = 4;
const PRINTABLE: u8 = 8;

/// Each ASCII byte's classes: host labels (letters, digits, `-`), path bytes the parser keeps
/// as they are, query bytes form encoding gives back unchanged (plus `=`), printable ASCII
/// other than `\` (the parser strips tabs and newlines anywhere, and treats `\` as `/`).
const URL_CLASS: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let alnum = c.is_ascii_alphanumeric();
        let mut class = 0;
        if alnum || c == b'-' {
            class |= HOST_BYTE;
        }
        if alnum
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'%'
            )
        {
            class |= PATH_BYTE;
        }
        if alnum || matches!(c, b'-' | b'.' | b'_' | b'*' | b'=') {
            class |= QUERY_BYTE;
        }
        if c >= 0x21 && c < 0x7f && c != b'\\' {
            class |= PRINTABLE;
        }
        table[b] = class;
        b += 1;
    }
    table
};

fn url_class(b: u8) -> u8 {
    if b < 0x80 { URL_CLASS[usize::from(b)] } else { 0 }
}

/// [`canonical_url`] for the common shape (see [`url_key`]) written into `out`; `None` when
/// `raw` is not of that shape (the caller then asks the `url` crate). One pass over the bytes.
fn fast_canonical_url(raw: &str, out: &mut CanonicalBuf) -> Option<()> {
    let b = raw.as_bytes();
    let n = b.len();
    let (scheme, default_port, mut i): (&[u8], u32, usize) = if n >= 8 && b[..8].eq_ignore_ascii_case(b"https://") {
        (b"https", 443, 8)
    } else if n >= 7 && b[..7].eq_ignore_ascii_case(b"http://") {
        (b"http", 80, 7)
    } else {
        return None;
    };
    // A plain host name: labels of letters, digits and inner hyphens, the last starting with a
    // letter (so never an IPv4 number), no IDNA (`xn--`). User info, IPv6 and the rest: slow path.
    let host_start = i;
    let mut label_start = i;
    loop {
        while i < n && url_class(b[i]) & HOST_BYTE != 0 {
            i += 1;
        }
        let label = &b[label_start..i];
        let (&first, &last) = (label.first()?, label.last()?);
        if first == b'-' || last == b'-' || (label.len() >= 4 && label[..4].eq_ignore_ascii_case(b"xn--")) {
            return None;
        }
        if i < n && b[i] == b'.' {
            i += 1;
            label_start = i;
        } else {
            break;
        }
    }
    if !b[label_start].is_ascii_alphabetic() {
        return None;
    }
    let host = &b[host_start..i];
    let mut port = None;
    if i < n && b[i] == b':' {
        i += 1;
        let start = i;
        let mut value = 0u32;
        while i < n && b[i].is_ascii_digit() {
            if i - start == 5 {
                return None;
            }
            value = value * 10 + u32::from(b[i] - b'0');
            i += 1;
        }
        if i == start || value > 65_535 {
            return None;
        }
        port = (value != default_port).then_some(value);
    }
    // The authority ends here (user info, `%`, `[`... are the slow path's).
    if i < n && !matches!(b[i], b'/' | b'?' | b'#') {
        return None;
    }
    // The path: bytes kept as they are, no `.` or `..` segment, no encoded dot.
    let path_start = i;
    let mut segment_start = i;
    let dot_segment = |seg: &[u8]| seg == b"." || seg == b"..";
    while i < n && url_class(b[i]) & PATH_BYTE != 0 {
        match b[i] {
            b'/' => {
                if dot_segment(&b[segment_start..i]) {
                    return None;
                }
                segment_start = i + 1;
            }
            b'%' if b.get(i + 1) == Some(&b'2') && b.get(i + 2).is_some_and(|&e| e | 0x20 == b'e') => return None,
            _ => {}
        }
        i += 1;
    }
    if dot_segment(&b[segment_start..i]) {
        return None;
    }
    let path = &b[path_start..i];
    // The query: `&`-separated pieces of unreserved bytes, each `key[=value]`.
    let mut params: [(&[u8], &[u8]); FAST_MAX_PARAMS] = [(b"", b""); FAST_MAX_PARAMS];
    let mut count = 0;
    if i < n && b[i] == b'?' {
        i += 1;
        loop {
            let start = i;
            let mut eq = None;
            while i < n && url_class(b[i]) & QUERY_BYTE != 0 {
                if b[i] == b'=' {
                    if eq.is_some() {
                        return None;
                    }
                    eq = Some(i);
                }
                i += 1;
            }
            let piece = &b[start..i];
            if !piece.is_empty() {
                let (k, v) = match eq {
                    Some(e) => (&b[start..e], &b[e + 1..i]),
                    None => (piece, &b""[..]),
                };
                let tracking = (k.len() >= 4 && k[..4].eq_ignore_ascii_case(b"utm_"))
                    || TRACKING_PARAMS.iter().any(|m| k.eq_ignore_ascii_case(m.as_bytes()));
                if !tracking {
                    *params.get_mut(count)? = (k, v);
                    count += 1;
                }
            }
            if i < n && b[i] == b'&' {
                i += 1;
            } else {
                break;
            }
        }
    }
    // Then only a fragment (dropped, but printable like the rest).
    match b.get(i) {
        None => {}
        Some(b'#') if b[i + 1..].iter().all(|&c| url_class(c) & PRINTABLE != 0) => {}
        Some(_) => return None,
    }
    out.push(scheme)?;
    out.push(b"://")?;
    let start = out.len;
    out.push(host)?;
    out.bytes[start..out.len].make_ascii_lowercase();
    if let Some(port) = port {
        let mut digits = [b':', 0, 0, 0, 0, 0];
        let mut len = 1;
        for div in [10_000, 1_000, 100, 10, 1] {
            if port >= div || div == 1 {
                digits[len] = b'0' + ((port / div) % 10) as u8;
                len += 1;
            }
        }
        out.push(&digits[..len])?;
    }
    out.push(path.strip_suffix(b"/").unwrap_or(path))?;
    let params = &mut params[..count];
    params.sort_unstable();
    for (i, (k, v)) in params.iter().enumerate() {
        out.push(if i == 0 { b"?" } else { b"&" })?;
        out.push(k)?;
        out.push(b"=")?;
        out.push(v)?;
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
    if raw.is_ascii() {
        // Most texts: normalised on the stack, hashed as the stream hash would.
        let mut buf = [0u8; 2 * StreamHash::CHUNK + 2];
        if let Some(len) = normalise_ascii(raw.as_bytes(), &mut buf) {
            if len < min_chars {
                return None;
            }
            let mut h = FixedState::with_seed(SEED).build_hasher();
            h.write_u8(domain);
            let mut chunks = buf[..len].chunks_exact(StreamHash::CHUNK);
            for chunk in chunks.by_ref() {
                h.write(chunk);
            }
            h.write(chunks.remainder());
            return Some(h.finish());
        }
    }
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
/// [`normalise_ascii`] as it was before it read eight bytes at a time (the reference the
/// proptest compares it with): writes the normalised form of ASCII `raw` (lower-case, each run of non-alphanumeric bytes
/// as one space, none at either end) into `buf`; returns its length, or `None` when it is
/// longer than `buf.len() - 2` (then `buf` holds its first `buf.len() - 1` bytes at least).
/// A run of alphanumerics at a time: faster than a branch-free loop over bytes.
fn normalise_ascii_by_runs(raw: &[u8], buf: &mut [u8]) -> Option<usize> {
    let limit = buf.len() - 2;
    let (n, mut len, mut i) = (raw.len(), 0, 0);
    loop {
        while i < n && ASCII_ALNUM_LOWER[usize::from(raw[i] & 0x7f)] == 0 {
            i += 1;
        }
        if i == n {
            return Some(len);
        }
        if len > 0 {
            buf[len] = b' ';
            len += 1;
        }
        while i < n && len <= limit {
            let lower = ASCII_ALNUM_LOWER[usize::from(raw[i] & 0x7f)];
            if lower == 0 {
                break;
            }
            buf[len] = lower;
            len += 1;
            i += 1;
        }
        if len > limit {
            return None;
        }
    }
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
            "https://user@h.example/x",
            "https://h.example:8080@x.example/y",
            "https://h.example/a?b=1#frag\\x",
            "https://h.example/a?b=1#frag x",
            "https://h.example/a/..?b=1",
            "https://h.example/a/%2",
            "https://h.example:65536/a",
            "https://h.example:000443/a",
            "https://h.example:0/a",
            "https://h.example?b=1&a",
            "https://h.example#x",
            "https://h.example/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15&p=16&q=17",
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

    proptest::proptest! {
        /// Eight bytes at a time, texts normalise as they did byte by byte, into any buffer.
        #[test]
        fn ascii_normalises_as_by_runs(raw in "[ -~]{0,80}|([a-zA-Z0-9]{1,9}[ .,:;!()/-]{1,3}){0,12}[a-zA-Z]{0,3}", room in 2usize..90) {
            let (mut fast, mut by_runs) = (vec![0u8; room], vec![0u8; room]);
            let (got, want) = (normalise_ascii(raw.as_bytes(), &mut fast), normalise_ascii_by_runs(raw.as_bytes(), &mut by_runs));
            proptest::prop_assert_eq!(got, want);
            let valid = got.unwrap_or(room - 2);
            proptest::prop_assert_eq!(&fast[..valid], &by_runs[..valid]);
        }
    }

    proptest::proptest! {
        #[test]
        fn prefix_keys_are_text_keys_or_hashes_of_the_normalised_prefix(raw in "[ -~]{0,90}|\\PC{0,40}") {
            let normalised = normalise_text(&raw, 0).unwrap_or_default();
            match prefix_key(&raw, 8, 0) {
                Prefix::Complete(key) => {
                    proptest::prop_assert!(!raw.is_ascii() || normalised.len() <= PREFIX_BYTES);
                    proptest::prop_assert_eq!(key, text_key(&raw, 8, 0));
                }
                Prefix::Partial(key) => {
                    proptest::prop_assert!(raw.is_ascii() && normalised.len() > PREFIX_BYTES);
                    let prefix = &normalised.as_bytes()[..PREFIX_BYTES];
                    proptest::prop_assert_eq!(key, hash_bytes(PREFIX_DOMAIN, prefix));
                }
            }
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
