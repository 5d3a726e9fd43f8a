//! HTTP basic authentication (RFC 7617) of an `http:` binding from two values, a
//! user and a password, so neither is stored pre-encoded: the request's
//! `Authorization: Basic …` is built from them at call time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `basic_auth: {user: "${env.SHOP_USER}", password: "${env.SHOP_PASSWORD}"}`.
///
/// Each value is literal text or reads the environment with `${env.NAME}`
/// (placeholders of arguments and state are not filled here). Both are secrets:
/// masked in logs, errors, results and the audit log, as the header they make is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user id; it may not hold `:`.
    pub user: String,
    /// The password.
    pub password: String,
}
