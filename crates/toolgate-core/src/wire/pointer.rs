//! JSON pointers (RFC 6901) inside schemas: escaping a segment, reading one back,
//! and decoding a `$ref` fragment's `%XX` escapes (RFC 3986).

/// Escapes one segment: `~` → `~0`, `/` → `~1`.
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Reads one escaped segment back.
pub(crate) fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// Decodes `%XX` escapes in a URI fragment; a `%` not followed by two hex digits
/// stays as it is.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_survives_escaping_and_back() {
        for segment in ["a/b", "~0", "~/~1", "plain", ""] {
            assert_eq!(unescape(&escape(segment)), segment);
        }
        assert_eq!(escape("a~/b"), "a~0~1b");
    }

    #[test]
    fn percent_escapes_decode_and_broken_ones_stay() {
        assert_eq!(percent_decode("/%24defs/a%20b"), "/$defs/a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }
}
