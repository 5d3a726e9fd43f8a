//! Conversation state on PostgreSQL: the `state` table, one row per (session, key).

use serde_json::{Map, Value};

use super::writer::{lock_and_head, write_state};
use super::{Inner, PostgresStore};
use crate::store::{StateStore, StoreError};

fn decode(inner: &Inner, session: &str, key: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::CorruptValue {
        location: inner.location.clone(),
        session: session.to_owned(),
        key: key.to_owned(),
        source,
    })
}

pub(super) async fn load_in(
    client: &impl deadpool_postgres::GenericClient,
    inner: &Inner,
    session: &str,
) -> Result<Map<String, Value>, StoreError> {
    let error = inner.error("loading a session");
    let read = super::prepared(
        client,
        "SELECT key, value FROM state WHERE session = $1 ORDER BY key",
        &error,
    )
    .await?;
    let rows = client.query(&read, &[&session]).await.map_err(error)?;
    let mut state = Map::new();
    for row in rows {
        let key: String = row.get(0);
        let value = decode(inner, session, &key, row.get(1))?;
        state.insert(key, value);
    }
    Ok(state)
}

impl StateStore for PostgresStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            load_in(&conn, &inner, &session).await
        })
    }

    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let (inner, session, key) = (self.inner.clone(), session.to_owned(), key.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT value FROM state WHERE session = $1 AND key = $2",
                    &[&session, &key],
                )
                .await
                .map_err(inner.error("reading a key"))?;
            row.map(|row| decode(&inner, &session, &key, row.get(0)))
                .transpose()
        })
    }

    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let (inner, session, writes) = (self.inner.clone(), session.to_owned(), writes.to_vec());
        self.run(async move {
            let error = inner.error("writing state");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            lock_and_head(&tx, &inner).await?;
            write_state(&tx, &inner, &session, &writes).await?;
            tx.commit().await.map_err(&error)
        })
    }

    fn reset(&self, session: &str) -> Result<(), StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute("DELETE FROM state WHERE session = $1", &[&session])
                .await
                .map_err(inner.error("resetting a session"))?;
            Ok(())
        })
    }
}
