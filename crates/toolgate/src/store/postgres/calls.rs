//! Call histories on PostgreSQL: the `calls` table, one row per call that ran.

use super::writer::{lock_and_head, record_call};
use super::{Inner, PostgresStore};
use crate::store::{CallHistory, RecordedCall, StoreError};

pub(super) async fn calls_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    session: &str,
    from: u64,
) -> Result<Vec<RecordedCall>, StoreError> {
    let from = i64::try_from(from).unwrap_or(i64::MAX);
    let rows = client
        .query(
            "SELECT seq, tool, ok, time FROM calls WHERE session = $1 AND seq >= $2 ORDER BY seq",
            &[&session, &from],
        )
        .await
        .map_err(inner.error("reading a session's calls"))?;
    Ok(rows
        .into_iter()
        .map(|row| RecordedCall {
            seq: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
            tool: row.get(1),
            ok: row.get(2),
            time: row.get(3),
        })
        .collect())
}

impl CallHistory for PostgresStore {
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        let (session, tool, time) = (session.to_owned(), tool.to_owned(), time.to_owned());
        self.run(async move {
            let error = inner.error("recording a call");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            lock_and_head(&tx, &inner).await?;
            record_call(&tx, &inner, &session, &tool, ok, &time).await?;
            tx.commit().await.map_err(&error)
        })
    }

    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        self.calls_from(session, 0)
    }

    fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            calls_in(&**conn, &inner, &session, from).await
        })
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute("DELETE FROM calls WHERE session = $1", &[&session])
                .await
                .map_err(inner.error("forgetting a session's calls"))?;
            Ok(())
        })
    }
}
