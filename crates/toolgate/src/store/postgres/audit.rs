//! The audit log on PostgreSQL: appends go through the writer task; reads and the
//! chain check are plain queries.

use toolgate_core::{Anchor, AuditEntry, AuditRecord, ChainBreak, ChainVerifier, VerifyReport};

use super::PostgresStore;
use crate::store::group_commit::Write;
use crate::store::{AuditLog, StoreError};

impl PostgresStore {
    fn audit_query(
        &self,
        action: &'static str,
        sql: &'static str,
        n: Option<i64>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = match n {
                Some(n) => conn.query(sql, &[&n]).await,
                None => conn.query(sql, &[]).await,
            }
            .map_err(inner.error(action))?;
            rows.into_iter()
                .map(|row| {
                    let seq: i64 = row.get(0);
                    serde_json::from_str(row.get(1)).map_err(|source| {
                        StoreError::CorruptAuditRecord {
                            location: inner.location.clone(),
                            seq: u64::try_from(seq).unwrap_or_default(),
                            source,
                        }
                    })
                })
                .collect()
        })
    }
}

impl AuditLog for PostgresStore {
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::Append(entry))
    }

    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_query(
            "reading the audit log",
            "SELECT seq, record FROM
               (SELECT seq, record FROM audit ORDER BY seq DESC LIMIT $1) AS last
             ORDER BY seq",
            Some(i64::try_from(n).unwrap_or(i64::MAX)),
        )
    }

    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        let inner = self.inner.clone();
        let anchors = anchors.to_vec();
        self.run(async move {
            let error = inner.error("verifying the audit log");
            let conn = inner.conn().await?;
            let rows = conn
                .query(
                    "SELECT seq, record, prev_hash, hash, kind, run_id FROM audit ORDER BY seq",
                    &[],
                )
                .await
                .map_err(&error)?;
            let mut verifier = ChainVerifier::with_anchors(anchors);
            for row in rows {
                let seq: i64 = row.get(0);
                let text: String = row.get(1);
                let changed = ChainBreak::Changed {
                    seq: u64::try_from(seq).unwrap_or_default(),
                };
                let Ok(record) = serde_json::from_str::<AuditRecord>(&text) else {
                    verifier.fail(changed);
                    break;
                };
                if record.to_canonical_json() != text {
                    verifier.fail(changed);
                    break;
                }
                if verifier.push(&record).is_some() {
                    break;
                }
                let columns_agree = i64::try_from(record.seq) == Ok(seq)
                    && row.get::<_, Option<&str>>(2) == Some(record.prev_hash.as_str())
                    && row.get::<_, Option<&str>>(3) == Some(record.hash.as_str())
                    && row.get::<_, Option<&str>>(4) == Some(record.entry.kind.as_str())
                    && row.get::<_, Option<&str>>(5) == Some(record.entry.run_id.as_str());
                if !columns_agree {
                    verifier.fail(changed);
                    break;
                }
            }
            Ok(verifier.finish())
        })
    }

    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_query(
            "listing pending audit intents",
            "SELECT seq, record FROM audit AS i
             WHERE kind = 'intent'
               AND NOT EXISTS (SELECT 1 FROM audit AS c WHERE c.run_id = i.run_id AND c.kind = 'completion')
             ORDER BY seq",
            None,
        )
    }
}
