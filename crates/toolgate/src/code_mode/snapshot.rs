//! A paused program's state as the worker hands it to the gate: a header that
//! names the format (the interpreter it belongs to) and carries the program's
//! line map, then the interpreter's own dump. A snapshot without the header was
//! written by an older interpreter, and is not read.

use super::rewrite::LineMap;

/// What opens a snapshot: the format, then the line map's length and each
/// line, 4 big-endian bytes each, then the interpreter's dump.
const MAGIC: &[u8] = b"toolgate-monty-1.4\n";

/// Why a snapshot without the header is not resumed.
pub(super) const OLD_SNAPSHOT: &str = "the program was paused by an older toolgate, whose interpreter state this version cannot read; nothing more of it ran. Run the program again (its calls before the pause are in the audit log)";

/// The interpreter's `dump` with its header.
pub(super) fn seal(dump: &[u8], lines: &LineMap) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + 4 * lines.0.len() + dump.len());
    bytes.extend_from_slice(MAGIC);
    let count = u32::try_from(lines.0.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&count.to_be_bytes());
    bytes.extend_from_slice(&lines.to_bytes());
    bytes.extend_from_slice(dump);
    bytes
}

/// The line map and the interpreter's dump of a snapshot [`seal`] wrote, or
/// `None` for any other bytes.
pub(super) fn open(bytes: &[u8]) -> Option<(LineMap, &[u8])> {
    let (count, rest) = bytes.strip_prefix(MAGIC)?.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_be_bytes(*count))
        .ok()?
        .checked_mul(4)?;
    let lines = rest.get(..len)?;
    Some((LineMap::from_bytes(lines), &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_snapshot_opens_to_its_line_map_and_dump() {
        let lines = LineMap(vec![0, 0, 1, 2, 2]);
        let sealed = seal(b"dump", &lines);
        assert_eq!(open(&sealed), Some((lines, &b"dump"[..])));
    }

    #[test]
    fn other_bytes_do_not_open() {
        assert_eq!(open(&[0, 8, 1, 2, 3]), None);
        let mut truncated = seal(b"", &LineMap(vec![1, 2, 3]));
        truncated.truncate(truncated.len() - 2);
        assert_eq!(open(&truncated), None);
    }
}
