//! Checking a stored audit log: walking its records in order, reporting the first
//! one that was changed, inserted or deleted, and, against anchors kept elsewhere,
//! a log cut short, emptied or rewritten.
//!
//! Limits: a hash chain proves the records agree with each other, not who wrote them.
//! Removing records from the end, or rewriting a record and every record after it,
//! leaves a chain that verifies by itself; checked against an [`Anchor`] kept
//! elsewhere ([`ChainVerifier::with_anchors`]), it shows as [`ChainBreak::Truncated`]
//! or [`ChainBreak::Rewritten`].

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Anchor, AuditRecord, GENESIS_HASH};

/// The first place a log stops being the chain it was written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChainBreak {
    /// Record `seq`'s hash does not match its content: it was edited (or is unreadable).
    Changed {
        /// The edited record's number.
        seq: u64,
    },
    /// Records after `after_seq` are missing: the next record's number skips ahead
    /// (0 when the log no longer starts at record 1).
    Deleted {
        /// The last record before the gap.
        after_seq: u64,
    },
    /// Record `seq` does not belong where it stands: its number repeats or goes
    /// backwards, or it does not link to the record before it although its number
    /// follows on. (A record rewritten with a freshly computed hash also shows here,
    /// as the next record then no longer links to it.)
    Inserted {
        /// The out-of-place record's number.
        seq: u64,
    },
    /// Record `seq` is not the record an anchor saw there: its hash differs from the
    /// anchor's, so the chain was rewritten from this record or an earlier one.
    Rewritten {
        /// The anchored record's number.
        seq: u64,
    },
    /// The log ends at record `after_seq` (0: it is empty), but an anchor saw record
    /// `anchor_seq`: the records after `after_seq` were removed.
    Truncated {
        /// The log's last record (0 when it is empty).
        after_seq: u64,
        /// The highest record an anchor saw.
        anchor_seq: u64,
    },
}

impl ChainBreak {
    /// The record the break was found at (for `Deleted`, the last good one).
    pub fn seq(self) -> u64 {
        match self {
            ChainBreak::Changed { seq }
            | ChainBreak::Inserted { seq }
            | ChainBreak::Rewritten { seq } => seq,
            ChainBreak::Deleted { after_seq } | ChainBreak::Truncated { after_seq, .. } => {
                after_seq
            }
        }
    }
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainBreak::Changed { seq } => write!(
                f,
                "record {seq} was changed (its hash does not match its content)"
            ),
            ChainBreak::Deleted { after_seq: 0 } => write!(
                f,
                "records were deleted from the start (the first record left is not record 1, or does not start the chain)"
            ),
            ChainBreak::Deleted { after_seq } => write!(
                f,
                "records after record {after_seq} were deleted (the next record's number skips ahead)"
            ),
            ChainBreak::Inserted { seq } => write!(
                f,
                "record {seq} was inserted (it does not follow from the record before it, or that record was rewritten with a new hash)"
            ),
            ChainBreak::Rewritten { seq } => write!(
                f,
                "record {seq} is not the record anchored there (its hash differs from the anchor's): the log was rewritten from this record or an earlier one"
            ),
            ChainBreak::Truncated {
                after_seq: 0,
                anchor_seq,
            } => write!(
                f,
                "the log is empty, but an anchor saw record {anchor_seq}: every record was deleted"
            ),
            ChainBreak::Truncated {
                after_seq,
                anchor_seq,
            } => write!(
                f,
                "the log ends at record {after_seq}, but an anchor saw record {anchor_seq}: the records after {after_seq} were removed"
            ),
        }
    }
}

/// The result of checking a log: intact, or where it first breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum VerifyReport {
    /// Every record links to the one before and matches its hash.
    Ok {
        /// How many records there are.
        records: u64,
        /// The last record's hash ([`GENESIS_HASH`] for an empty log); keep it
        /// elsewhere to detect later truncation.
        head: String,
    },
    /// The log was tampered with.
    Broken {
        /// The first break.
        #[serde(rename = "break")]
        at: ChainBreak,
        /// How many records before it checked out.
        verified: u64,
    },
}

impl VerifyReport {
    /// Whether the log is intact.
    pub fn is_ok(&self) -> bool {
        matches!(self, VerifyReport::Ok { .. })
    }
}

/// Checks records one at a time, in stored order; stops at the first break.
///
/// [`verify_chain`] is this over an iterator; stores use it directly so they can
/// report a row they cannot even read with [`ChainVerifier::fail`].
#[derive(Debug, Clone, Default)]
pub struct ChainVerifier {
    verified: u64,
    last: Option<(u64, String)>,
    broken: Option<ChainBreak>,
    /// Anchors not reached yet, highest number first (so the next is last).
    anchors: Vec<Anchor>,
}

impl ChainVerifier {
    /// A verifier that has seen no records yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A verifier that also holds the log to `anchors`: each anchored record must
    /// carry the anchor's hash, and the log must reach the highest anchor.
    pub fn with_anchors(anchors: impl IntoIterator<Item = Anchor>) -> Self {
        let mut anchors: Vec<Anchor> = anchors.into_iter().collect();
        anchors.sort_by(|a, b| b.cmp(a));
        anchors.dedup();
        Self {
            anchors,
            ..Self::default()
        }
    }

    /// Checks the next record; returns the break if this record is where the log
    /// first breaks. Once broken, further records are ignored.
    pub fn push(&mut self, record: &AuditRecord) -> Option<ChainBreak> {
        if self.broken.is_some() {
            return None;
        }
        let found = self.check(record);
        match found {
            Some(at) => self.broken = Some(at),
            None => {
                self.verified += 1;
                self.last = Some((record.seq, record.hash.clone()));
            }
        }
        found
    }

    /// Whether the record just checked is the one each anchor at its number saw.
    fn check_anchors(&mut self, seq: u64, hash: &str) -> Option<ChainBreak> {
        while let Some(anchor) = self.anchors.last() {
            if anchor.seq > seq {
                break;
            }
            // Below `seq`: only the genesis anchor, which every log starts from.
            let holds = anchor.seq < seq || anchor.head == hash;
            self.anchors.pop();
            if !holds {
                return Some(ChainBreak::Rewritten { seq });
            }
        }
        None
    }

    /// Records a break found outside the chain rules (e.g. an unreadable row), if
    /// none was found before.
    pub fn fail(&mut self, at: ChainBreak) {
        self.broken.get_or_insert(at);
    }

    /// Whether a break was found.
    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// The verdict over every record pushed.
    pub fn finish(mut self) -> VerifyReport {
        let head_seq = self.last.as_ref().map_or(0, |(seq, _)| *seq);
        if let Some(highest) = self.anchors.first().filter(|a| a.seq > head_seq) {
            let truncated = ChainBreak::Truncated {
                after_seq: head_seq,
                anchor_seq: highest.seq,
            };
            self.broken.get_or_insert(truncated);
        }
        match self.broken {
            Some(at) => VerifyReport::Broken {
                at,
                verified: self.verified,
            },
            None => VerifyReport::Ok {
                records: self.verified,
                head: self
                    .last
                    .map_or_else(|| GENESIS_HASH.to_owned(), |(_, hash)| hash),
            },
        }
    }

    fn check(&mut self, record: &AuditRecord) -> Option<ChainBreak> {
        let (prev_seq, prev_hash) = match &self.last {
            Some((seq, hash)) => (*seq, hash.as_str()),
            None => (0, GENESIS_HASH),
        };
        if record.expected_hash() != record.hash {
            return Some(ChainBreak::Changed { seq: record.seq });
        }
        let linked = record.prev_hash == prev_hash;
        if record.seq <= prev_seq {
            Some(ChainBreak::Inserted { seq: record.seq })
        } else if record.seq > prev_seq + 1 {
            Some(ChainBreak::Deleted {
                after_seq: prev_seq,
            })
        } else if !linked {
            Some(ChainBreak::Inserted { seq: record.seq })
        } else {
            self.check_anchors(record.seq, &record.hash)
        }
    }
}

/// Checks a whole log, records in stored order, and reports the first break.
///
/// ```
/// use toolgate_core::{GENESIS_HASH, VerifyReport, verify_chain};
///
/// let empty: Vec<toolgate_core::AuditRecord> = Vec::new();
/// assert_eq!(
///     verify_chain(&empty),
///     VerifyReport::Ok { records: 0, head: GENESIS_HASH.to_owned() }
/// );
/// ```
pub fn verify_chain<R: Borrow<AuditRecord>>(records: impl IntoIterator<Item = R>) -> VerifyReport {
    verify_chain_anchored(records, [])
}

/// [`verify_chain`], holding the log to `anchors` kept elsewhere as well (see
/// [`Anchor`]): reports a log cut short, emptied or rewritten since they were taken.
pub fn verify_chain_anchored<R: Borrow<AuditRecord>>(
    records: impl IntoIterator<Item = R>,
    anchors: impl IntoIterator<Item = Anchor>,
) -> VerifyReport {
    let mut verifier = ChainVerifier::with_anchors(anchors);
    for record in records {
        if verifier.push(record.borrow()).is_some() {
            break;
        }
    }
    verifier.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordKind;
    use crate::audit::tests::{chain, entry};
    use serde_json::json;

    fn broken_at(records: &[AuditRecord]) -> ChainBreak {
        match verify_chain(records) {
            VerifyReport::Broken { at, .. } => at,
            ok => panic!("expected a break, got {ok:?}"),
        }
    }

    #[test]
    fn an_untouched_chain_verifies_with_its_count_and_head() {
        let records = chain(5);
        assert_eq!(
            verify_chain(&records),
            VerifyReport::Ok {
                records: 5,
                head: records[4].hash.clone()
            }
        );
        assert_eq!(records[0].prev_hash, GENESIS_HASH);
        assert_eq!(records[1].prev_hash, records[0].hash);
    }

    #[test]
    fn an_edited_record_is_changed() {
        let mut records = chain(5);
        records[2].entry.arguments = json!({"order_id": "A-1", "amount": 9999});
        assert_eq!(broken_at(&records), ChainBreak::Changed { seq: 3 });
    }

    #[test]
    fn an_edited_hash_or_prev_hash_is_changed() {
        let mut records = chain(5);
        records[3].hash = "f".repeat(64);
        assert_eq!(broken_at(&records), ChainBreak::Changed { seq: 4 });

        let mut records = chain(5);
        records[1].prev_hash = "e".repeat(64);
        assert_eq!(broken_at(&records), ChainBreak::Changed { seq: 2 });
    }

    #[test]
    fn a_deleted_record_is_deleted_after_the_one_before_it() {
        let mut records = chain(5);
        records.remove(2);
        assert_eq!(broken_at(&records), ChainBreak::Deleted { after_seq: 2 });
        assert_eq!(
            verify_chain(&records),
            VerifyReport::Broken {
                at: ChainBreak::Deleted { after_seq: 2 },
                verified: 2
            }
        );
    }

    #[test]
    fn a_deleted_first_record_is_deleted_after_zero() {
        let mut records = chain(3);
        records.remove(0);
        assert_eq!(broken_at(&records), ChainBreak::Deleted { after_seq: 0 });
    }

    #[test]
    fn a_record_with_a_repeated_number_is_inserted() {
        // A forged record 3 that links to record 2, placed before the real record 3.
        let mut records = chain(5);
        let forged = AuditRecord::seal(3, &records[1].hash, entry(RecordKind::Intent, "forged"));
        records.insert(2, forged);
        assert_eq!(broken_at(&records), ChainBreak::Inserted { seq: 3 });
    }

    #[test]
    fn a_record_that_does_not_link_with_no_gap_is_inserted() {
        // Appended at the right number but sealed against the wrong head.
        let mut records = chain(4);
        records.push(AuditRecord::seal(
            5,
            &"a".repeat(64),
            entry(RecordKind::Intent, "forged"),
        ));
        assert_eq!(broken_at(&records), ChainBreak::Inserted { seq: 5 });
    }

    #[test]
    fn records_out_of_order_break_at_the_first_misplaced_one() {
        let mut records = chain(5);
        records.swap(2, 3);
        // Record 4 now follows record 2: its number skips, it does not link.
        assert_eq!(broken_at(&records), ChainBreak::Deleted { after_seq: 2 });
        let mut records = chain(3);
        let first = records[0].clone();
        records.push(first);
        assert_eq!(broken_at(&records), ChainBreak::Inserted { seq: 1 });
    }

    #[test]
    fn a_verifier_that_was_failed_reports_that_failure() {
        let records = chain(3);
        let mut verifier = ChainVerifier::new();
        verifier.push(&records[0]);
        verifier.fail(ChainBreak::Changed { seq: 2 });
        assert!(verifier.push(&records[2]).is_none());
        assert_eq!(
            verifier.finish(),
            VerifyReport::Broken {
                at: ChainBreak::Changed { seq: 2 },
                verified: 1
            }
        );
    }

    #[test]
    fn reports_serialize_with_a_status_and_a_break_kind() {
        let broken = VerifyReport::Broken {
            at: ChainBreak::Deleted { after_seq: 2 },
            verified: 2,
        };
        assert_eq!(
            serde_json::to_value(&broken).unwrap(),
            json!({"status": "broken", "break": {"kind": "deleted", "after_seq": 2}, "verified": 2})
        );
        let ok = VerifyReport::Ok {
            records: 0,
            head: GENESIS_HASH.into(),
        };
        assert_eq!(serde_json::to_value(&ok).unwrap()["status"], "ok");
    }

    fn anchor(record: &AuditRecord) -> Anchor {
        Anchor {
            seq: record.seq,
            head: record.hash.clone(),
        }
    }

    #[test]
    fn a_chain_that_holds_its_anchors_verifies() {
        let records = chain(5);
        let genesis = Anchor {
            seq: 0,
            head: GENESIS_HASH.into(),
        };
        let anchors = [genesis, anchor(&records[1]), anchor(&records[4])];
        assert!(verify_chain_anchored(&records, anchors.clone()).is_ok());
        // A log that grew since is still the log the anchors saw.
        assert!(verify_chain_anchored(chain(7), anchors).is_ok());
    }

    #[test]
    fn a_log_cut_short_of_an_anchor_is_truncated() {
        let records = chain(5);
        let anchors = [anchor(&records[1]), anchor(&records[4])];
        assert_eq!(
            verify_chain_anchored(&records[..3], anchors.clone()),
            VerifyReport::Broken {
                at: ChainBreak::Truncated {
                    after_seq: 3,
                    anchor_seq: 5
                },
                verified: 3
            }
        );
        let none: &[AuditRecord] = &[];
        let at = ChainBreak::Truncated {
            after_seq: 0,
            anchor_seq: 5,
        };
        assert_eq!(
            verify_chain_anchored(none, anchors),
            VerifyReport::Broken { at, verified: 0 }
        );
        assert!(at.to_string().contains("every record was deleted"), "{at}");
    }

    #[test]
    fn a_chain_rewritten_before_an_anchor_is_rewritten_at_the_anchor() {
        let records = chain(5);
        let anchors = [anchor(&records[3])];
        // Rewritten from record 2 on, sealed afresh: the chain itself holds.
        let mut forged: Vec<AuditRecord> = records[..1].to_vec();
        for seq in 2..=5 {
            let prev = forged.last().map(|r| r.hash.clone()).unwrap();
            let mut e = entry(RecordKind::Intent, "forged");
            e.tool = format!("forged-{seq}");
            forged.push(AuditRecord::seal(seq, &prev, e));
        }
        assert!(verify_chain(&forged).is_ok());
        assert_eq!(
            verify_chain_anchored(&forged, anchors),
            VerifyReport::Broken {
                at: ChainBreak::Rewritten { seq: 4 },
                verified: 3
            }
        );
    }
}
