//! `#[derive(Tool)]`: the constants it writes (its compile errors are checked in
//! toolgate-derive's `tests/ui.rs`).

use toolgate::{Effect, Tool, ToolMeta, tool::validate_name};

/// Fetch a URL.
#[derive(Tool)]
#[tool(effect = "external")]
struct HTTPFetch;

/// Create a ticket.
#[derive(Tool)]
#[tool(effect = "write")]
struct CreateTicket;

/// Get what a URL serves.
#[derive(Tool)]
#[tool(effect = "read")]
struct GetURLContents;

/// Hash a file.
#[derive(Tool)]
#[tool(effect = "read")]
struct Sha256Hash;

/// A raw identifier.
#[derive(Tool)]
#[tool(effect = "read")]
#[allow(non_camel_case_types)]
struct r#match;

#[test]
fn the_name_is_the_struct_name_in_snake_case_with_acronyms_as_words() {
    assert_eq!(HTTPFetch::NAME, "http_fetch");
    assert_eq!(CreateTicket::NAME, "create_ticket");
    assert_eq!(GetURLContents::NAME, "get_url_contents");
    assert_eq!(Sha256Hash::NAME, "sha256_hash");
    assert_eq!(r#match::NAME, "match");
    for name in [
        HTTPFetch::NAME,
        CreateTicket::NAME,
        GetURLContents::NAME,
        Sha256Hash::NAME,
    ] {
        assert_eq!(validate_name(name), Ok(()));
    }
}

/// Open an issue.
#[derive(Tool)]
#[tool(name = "github.create_issue", effect = "external")]
struct OpenIssue;

#[test]
fn a_name_attribute_overrides_the_struct_name() {
    assert_eq!(OpenIssue::NAME, "github.create_issue");
}

///   Search the knowledge base
/// for articles.
///
///
/// Returns at most ten,
///    best first.
#[derive(Tool)]
#[tool(effect = "read")]
struct SearchArticles;

/**
 * Archive a ticket.
 *
 * It can be restored.
 */
#[derive(Tool)]
#[tool(effect = "idempotent")]
struct ArchiveTicket;

#[test]
fn the_doc_comment_is_the_description_with_lines_joined_and_paragraphs_kept() {
    assert_eq!(
        SearchArticles::DESCRIPTION,
        "Search the knowledge base for articles.\n\nReturns at most ten, best first."
    );
    assert_eq!(
        ArchiveTicket::DESCRIPTION,
        "Archive a ticket.\n\nIt can be restored."
    );
}

/// For maintainers: this doc comment is not shown to the model.
#[derive(Tool)]
#[tool(description = "Delete a ticket for good.", effect = "destructive")]
struct DeleteTicket;

#[test]
fn a_description_attribute_wins_over_the_doc_comment() {
    assert_eq!(DeleteTicket::DESCRIPTION, "Delete a ticket for good.");
}

#[derive(Tool)]
#[tool(description = "Run a shell command.")]
#[tool(effect = "execute")]
struct RunCommand;

#[test]
fn every_effect_spelling_maps_to_its_variant_and_keys_may_span_attributes() {
    assert_eq!(GetURLContents::EFFECT, Effect::Read);
    assert_eq!(ArchiveTicket::EFFECT, Effect::Idempotent);
    assert_eq!(CreateTicket::EFFECT, Effect::Write);
    assert_eq!(RunCommand::EFFECT, Effect::Execute);
    assert_eq!(DeleteTicket::EFFECT, Effect::Destructive);
    assert_eq!(HTTPFetch::EFFECT, Effect::External);
    assert_eq!(RunCommand::DESCRIPTION, "Run a shell command.");
}

/// Wrap another value.
#[derive(Tool)]
#[tool(effect = "read")]
struct Wrapper<'a, T: Clone, const N: usize>
where
    T: Send,
{
    items: &'a [T; N],
}

#[test]
fn generic_structs_get_a_generic_impl() {
    fn meta<M: ToolMeta>() -> (&'static str, &'static str, Effect) {
        (M::NAME, M::DESCRIPTION, M::EFFECT)
    }
    let items = [1u8, 2];
    let wrapper = Wrapper { items: &items };
    assert_eq!(wrapper.items.len(), 2);
    assert_eq!(
        meta::<Wrapper<'_, u8, 2>>(),
        ("wrapper", "Wrap another value.", Effect::Read)
    );
}

mod facade {
    pub use toolgate as tg;
}

/// Ping through the crate's own name.
#[derive(Tool)]
#[tool(crate = "toolgate", effect = "read")]
struct PingDirect;

/// Ping through a re-export.
#[derive(Tool)]
#[tool(crate = "facade::tg", effect = "read")]
struct PingReexported;

#[test]
fn the_crate_path_can_be_overridden() {
    assert_eq!(<PingDirect as toolgate::ToolMeta>::NAME, "ping_direct");
    assert_eq!(
        <PingReexported as facade::tg::ToolMeta>::NAME,
        "ping_reexported"
    );
}
