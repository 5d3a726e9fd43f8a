//! Data-origin labels on MCP requests (SEP-3193, a draft): the host says, in a
//! request's `_meta["io.modelcontextprotocol/flowOrigin"]`, whose content
//! entered the context the request was made from.
//!
//! toolgate reads such a label on a call it serves, and writes one on a call
//! it makes upstream. A label only ever restricts: a served call whose label
//! names a contributor that is not the user, the host or a verified server
//! counts as having read untrusted content, and every one of its arguments as
//! tainted; a label never lets through what would otherwise be refused.

use serde_json::{Value, json};

use super::{Seen, SeenLabel};

/// The `_meta` key of a request's origin label.
pub const FLOW_ORIGIN_META: &str = "io.modelcontextprotocol/flowOrigin";

/// The label toolgate puts on a call it makes upstream, from what the
/// conversation has seen: the user always; the host for private data its own
/// tools returned; an unverified contributor for untrusted content. No
/// contributor names a server, so no upstream learns of the others.
pub fn flow_origin(seen: &Seen) -> Value {
    let mut contributors = vec![json!({"principal": "urn:mcp:user", "assurance": "user"})];
    if seen.has(SeenLabel::Private) {
        contributors.push(json!({"principal": "urn:mcp:host", "assurance": "host"}));
    }
    if seen.has(SeenLabel::Untrusted) {
        contributors.push(json!({"assurance": "unverified"}));
    }
    json!({"contributors": contributors, "complete": true})
}

/// The contributors of a served call's origin label that are not the user,
/// the host or a verified server, as words for a reason (`unverified
/// https://mcp.webfetch.example/mcp`); an incomplete or malformed label adds
/// an unverified contributor of its own. Empty when the label names none.
pub fn untrusted_contributors(label: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(contributors) = label.get("contributors").and_then(Value::as_array) else {
        return vec!["a label toolgate cannot read".to_owned()];
    };
    for contributor in contributors {
        let assurance = contributor
            .get("assurance")
            .and_then(Value::as_str)
            .unwrap_or("unverified");
        if matches!(assurance, "user" | "host" | "verified") {
            continue;
        }
        // Unknown assurances read as `unverified`, as the draft asks.
        let assurance = if assurance == "tofu" {
            "tofu"
        } else {
            "unverified"
        };
        let words = match contributor.get("principal").and_then(Value::as_str) {
            // A host's words, shown to a model, a person and a terminal.
            Some(principal) => format!(
                "{assurance} {}",
                crate::escape_for_terminal(&crate::clip_text(principal, 120))
            ),
            None => assurance.to_owned(),
        };
        out.push(words);
    }
    if label.get("complete").and_then(Value::as_bool) != Some(true) {
        out.push("unverified (the label may be incomplete)".to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Labels;

    #[test]
    fn an_outgoing_label_names_the_kinds_of_content_and_no_server() {
        let mut seen = Seen::default();
        assert_eq!(
            flow_origin(&seen),
            json!({"contributors": [{"principal": "urn:mcp:user", "assurance": "user"}], "complete": true})
        );
        seen.note("fetch", "t", Labels::UNTRUSTED);
        seen.note(
            "crm",
            "t",
            Labels {
                untrusted: false,
                private: true,
            },
        );
        let label = flow_origin(&seen);
        assert_eq!(label["contributors"].as_array().unwrap().len(), 3);
        assert_eq!(label["contributors"][2], json!({"assurance": "unverified"}));
    }

    #[test]
    fn an_incoming_label_restricts_for_anyone_but_the_user_the_host_and_verified_servers() {
        let trusted = json!({"contributors": [{"principal": "urn:mcp:user", "assurance": "user"},
            {"principal": "https://crm.example/mcp", "assurance": "verified"}], "complete": true});
        assert!(untrusted_contributors(&trusted).is_empty());
        let web = json!({"contributors": [{"principal": "urn:mcp:user", "assurance": "user"},
            {"principal": "https://mcp.webfetch.example/mcp", "assurance": "unverified"},
            {"assurance": "someday"}], "complete": true});
        assert_eq!(
            untrusted_contributors(&web),
            ["unverified https://mcp.webfetch.example/mcp", "unverified"]
        );
        assert_eq!(
            untrusted_contributors(&json!({"contributors": [], "complete": false})),
            ["unverified (the label may be incomplete)"]
        );
        let hostile = json!({"contributors": [{"principal": "https://x\u{1b}]0;pwned\u{7}", "assurance": "tofu"}], "complete": true});
        assert!(!untrusted_contributors(&hostile)[0].contains('\u{1b}'));
        assert_eq!(
            untrusted_contributors(&json!("nonsense")),
            ["a label toolgate cannot read"]
        );
    }
}
