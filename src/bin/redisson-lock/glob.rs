//! Redis's glob patterns (`KEYS`, `SCAN ... MATCH`, `PSUBSCRIBE`): matching a name
//! against one, and a pattern that matches a text literally.

/// Whether `text` matches the glob `pattern` (`*`, `?`, `[...]`, `\` escapes), as Redis
/// matches it.
pub(crate) fn matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let (mut star_p, mut star_t) = (None, 0usize);
    while t < text.len() {
        let step = match pattern.get(p) {
            Some(b'*') => {
                star_p = Some(p);
                star_t = t;
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => class(pattern, p, text[t]),
            Some(b'\\') if p + 1 < pattern.len() => (pattern[p + 1] == text[t]).then_some(p + 2),
            Some(&c) => (c == text[t]).then_some(p + 1),
            None => None,
        };
        match (step, star_p) {
            (Some(next), _) => {
                p = next;
                t += 1;
            }
            (None, Some(sp)) => {
                p = sp + 1;
                star_t += 1;
                t = star_t;
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// `[...]` at `p` against `c`: the index after the class when it matches.
fn class(pattern: &[u8], p: usize, c: u8) -> Option<usize> {
    let mut i = p + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    while i < pattern.len() && pattern[i] != b']' {
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            matched |= pattern[i + 1] == c;
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (lo, hi) = (
                pattern[i].min(pattern[i + 2]),
                pattern[i].max(pattern[i + 2]),
            );
            matched |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    if i >= pattern.len() {
        return None; // no closing `]`
    }
    (matched != negate).then_some(i + 1)
}

/// A glob pattern that matches `text` literally.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_redis_does() {
        assert!(matches(b"*", b"anything"));
        assert!(matches(b"orders:*", b"orders:42"));
        assert!(!matches(b"orders:*", b"order"));
        assert!(matches(b"o?d*", b"orders"));
        assert!(matches(b"[a-c]x", b"bx"));
        assert!(!matches(b"[^a-c]x", b"bx"));
        assert!(matches(b"a\\*", b"a*"));
        assert!(!matches(b"a\\*", b"ab"));
        assert!(matches(b"*b*c", b"abxbc"));
    }

    #[test]
    fn literal_patterns() {
        assert_eq!(literal("a*b[c]"), "a\\*b\\[c\\]");
        assert!(matches(literal("a*b[c]").as_bytes(), b"a*b[c]"));
    }
}
