//! Untrusted results' fingerprints in SQLite: the `untrusted_text` table, one
//! row per result.

use rusqlite::params;
use toolgate_core::Fingerprints;

use super::SqliteStore;
use crate::store::{StoreError, UntrustedText};

/// Version 14 of the schema.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS untrusted_text (
    session TEXT NOT NULL,
    run_id TEXT NOT NULL,
    prints BLOB NOT NULL,
    PRIMARY KEY (session, run_id)
) WITHOUT ROWID;";

impl UntrustedText for SqliteStore {
    fn record_untrusted_text(
        &self,
        session: &str,
        run_id: &str,
        prints: &Fingerprints,
    ) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT OR REPLACE INTO untrusted_text (session, run_id, prints) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut stmt| stmt.execute(params![session, run_id, prints.to_bytes()]))
            .map_err(self.error("recording an untrusted result"))?;
        Ok(())
    }

    fn untrusted_text(&self, session: &str) -> Result<Fingerprints, StoreError> {
        let error = self.error("reading a session's untrusted results");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT prints FROM untrusted_text WHERE session = ?1")
            .map_err(&error)?;
        let rows = stmt
            .query_map([session], |row| row.get::<_, Vec<u8>>(0))
            .map_err(&error)?;
        let mut all = Fingerprints::default();
        for bytes in rows {
            all.merge(&Fingerprints::from_bytes(&bytes.map_err(&error)?));
        }
        Ok(all)
    }
}
