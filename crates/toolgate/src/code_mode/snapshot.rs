//! A paused program's state as the worker hands it to the gate: a header that
//! names the format (the interpreter it belongs to) and carries what the worker
//! itself must remember (the program's line map, the call it waits for, the
//! calls deferred behind that one), then the interpreter's own dump. A snapshot
//! without the header was written by an older interpreter, and is not read.

use serde::{Deserialize, Serialize};

use super::protocol::BatchCall;
use super::rewrite::LineMap;

/// What opens a snapshot: the format, then the header's length (4 bytes,
/// big-endian) and the header as JSON, then the interpreter's dump.
const MAGIC: &[u8] = b"toolgate-monty-1.4\n";

/// Why a snapshot without the header is not resumed.
pub(super) const OLD_SNAPSHOT: &str = "the program was paused by an older toolgate, whose interpreter state this version cannot read; nothing more of it ran. Run the program again (its calls before the pause are in the audit log)";

/// What the worker keeps beside the interpreter's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Header {
    /// The program's own line for each line the interpreter runs.
    pub lines: LineMap,
    /// The id of the awaited call the program waits for, when it paused among
    /// others (a call made without `await`, or awaited alone, is the
    /// interpreter's own pending call).
    pub awaited: Option<u32>,
    /// Awaited calls that also wait for a person, asked again on resume.
    pub deferred: Vec<BatchCall>,
}

/// The interpreter's `dump` with its header.
pub(super) fn seal(dump: &[u8], header: &Header) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap_or_default();
    let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + json.len() + dump.len());
    bytes.extend_from_slice(MAGIC);
    let len = u32::try_from(json.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes.extend_from_slice(&json);
    bytes.extend_from_slice(dump);
    bytes
}

/// The header and the interpreter's dump of a snapshot [`seal`] wrote, or
/// `None` for any other bytes.
pub(super) fn open(bytes: &[u8]) -> Option<(Header, &[u8])> {
    let (len, rest) = bytes.strip_prefix(MAGIC)?.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    let header = serde_json::from_slice(rest.get(..len)?).ok()?;
    Some((header, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_sealed_snapshot_opens_to_its_header_and_dump() {
        let header = Header {
            lines: LineMap(vec![0, 0, 1, 2, 2]),
            awaited: Some(7),
            deferred: vec![BatchCall {
                id: 8,
                function: "send_email".into(),
                arguments: json!({"to": "ada@example.com"}),
            }],
        };
        let sealed = seal(b"dump", &header);
        assert_eq!(open(&sealed), Some((header, &b"dump"[..])));
    }

    #[test]
    fn other_bytes_do_not_open() {
        assert_eq!(open(&[0, 8, 1, 2, 3]), None);
        let mut truncated = seal(b"", &Header::default());
        truncated.truncate(truncated.len() - 2);
        assert_eq!(open(&truncated), None);
    }
}
