//! Untrusted results' fingerprints on PostgreSQL: the `untrusted_text` table,
//! one row per result.

use toolgate_core::Fingerprints;

use super::PostgresStore;
use crate::store::{StoreError, UntrustedText};

impl UntrustedText for PostgresStore {
    fn record_untrusted_text(
        &self,
        session: &str,
        run_id: &str,
        prints: &Fingerprints,
    ) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        let (session, run_id, bytes) = (session.to_owned(), run_id.to_owned(), prints.to_bytes());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute(
                "INSERT INTO untrusted_text (session, run_id, prints) VALUES ($1, $2, $3)
                 ON CONFLICT (session, run_id) DO UPDATE SET prints = EXCLUDED.prints",
                &[&session, &run_id, &bytes],
            )
            .await
            .map_err(inner.error("recording an untrusted result"))?;
            Ok(())
        })
    }

    fn untrusted_text(&self, session: &str) -> Result<Fingerprints, StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = conn
                .query(
                    "SELECT prints FROM untrusted_text WHERE session = $1",
                    &[&session],
                )
                .await
                .map_err(inner.error("reading a session's untrusted results"))?;
            let mut all = Fingerprints::default();
            for row in rows {
                all.merge(&Fingerprints::from_bytes(&row.get::<_, Vec<u8>>(0)));
            }
            Ok(all)
        })
    }
}
