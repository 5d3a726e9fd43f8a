//! Client sessions on PostgreSQL: each method one statement (writing one, a
//! transaction that also drops the expired ones), so every instance sees a session
//! the moment another wrote or ended it.

use tokio_postgres::types::ToSql;

use super::{PostgresStore, StoreError};
use crate::store::sessions::{sql_ms, stored};
use crate::store::{SessionKey, SessionKind, StoredSession, StoredSessions};

type Params = Vec<Box<dyn ToSql + Send + Sync>>;

impl PostgresStore {
    /// Runs one statement; the rows it changed.
    fn change_sessions(
        &self,
        action: &'static str,
        sql: &'static str,
        params: Params,
    ) -> Result<u64, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
            conn.execute(sql, &params)
                .await
                .map_err(inner.error(action))
        })
    }
}

impl StoredSessions for PostgresStore {
    fn put_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        let session = session.clone();
        self.run(async move {
            let error = inner.error("writing a session");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            tx.execute(
                "DELETE FROM sessions WHERE expires_ms <= $1",
                &[&sql_ms(session.created_ms)],
            )
            .await
            .map_err(&error)?;
            tx.execute(
                "INSERT INTO sessions (kind, key, principal, data, created_ms, expires_ms, idle_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (kind, key) DO UPDATE SET principal = EXCLUDED.principal,
                    data = EXCLUDED.data, created_ms = EXCLUDED.created_ms,
                    expires_ms = EXCLUDED.expires_ms, idle_ms = EXCLUDED.idle_ms",
                &[
                    &session.kind.as_str(),
                    &session.key.as_str(),
                    &session.principal,
                    &session.data.to_string(),
                    &sql_ms(session.created_ms),
                    &sql_ms(session.expires_ms),
                    &sql_ms(session.idle_ms),
                ],
            )
            .await
            .map_err(&error)?;
            tx.commit().await.map_err(&error)
        })
    }

    fn session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
    ) -> Result<Option<StoredSession>, StoreError> {
        let inner = self.inner.clone();
        let key = key.as_str().to_owned();
        self.run(async move {
            let conn = inner.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT principal, data, created_ms, expires_ms, idle_ms FROM sessions
                     WHERE kind = $1 AND key = $2 AND expires_ms > $3",
                    &[&kind.as_str(), &key, &sql_ms(now_ms)],
                )
                .await
                .map_err(inner.error("reading a session"))?;
            Ok(row.and_then(|row| {
                let times = (row.get(2), row.get(3), row.get(4));
                stored(kind, key, row.get(0), row.get(1), times)
            }))
        })
    }

    fn renew_session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
        expires_ms: u64,
    ) -> Result<bool, StoreError> {
        let changed = self.change_sessions(
            "renewing a session",
            "UPDATE sessions SET expires_ms = $4
             WHERE kind = $1 AND key = $2 AND expires_ms > $3",
            vec![
                Box::new(kind.as_str()),
                Box::new(key.as_str().to_owned()),
                Box::new(sql_ms(now_ms)),
                Box::new(sql_ms(expires_ms)),
            ],
        )?;
        Ok(changed > 0)
    }

    fn delete_session(&self, kind: SessionKind, key: &SessionKey) -> Result<bool, StoreError> {
        let changed = self.change_sessions(
            "ending a session",
            "DELETE FROM sessions WHERE kind = $1 AND key = $2",
            vec![Box::new(kind.as_str()), Box::new(key.as_str().to_owned())],
        )?;
        Ok(changed > 0)
    }
}
