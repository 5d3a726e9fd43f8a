//! `#[derive(Tool)]`: writes a tool's static identity, `ToolMeta`, for a struct.
//!
//! The derive writes only the boring half of a tool: its canonical name (the struct
//! name in snake case), its description (the doc comment) and its effect (always
//! declared, never guessed, because retries and consent depend on it). The behaviour,
//! `ToolHandler`, stays hand-written.
//!
//! ```ignore
//! /// Look up an order by its number.
//! #[derive(Tool)]
//! #[tool(effect = "read")]
//! struct LookupOrder; // NAME = "lookup_order"
//! ```
//!
//! Keys of `#[tool(...)]`, each at most once, each a string literal:
//!
//! - `effect` (required): `read`, `idempotent`, `write`, `execute`, `destructive` or
//!   `external`;
//! - `name`: overrides the snake-case name; must be a canonical tool name;
//! - `description`: overrides the doc comment;
//! - `crate`: the path to the toolgate crate, `::toolgate` by default
//!   (`crate = "toolgate_core"` for users of the core crate alone).
//!
//! Every mistake is a compile error on the token at fault, and independent mistakes
//! are reported together.

mod attr;
mod doc;
mod errors;
mod name;

use heck::ToSnakeCase;
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, LitStr, parse_macro_input};

use crate::errors::Errors;

/// The spellings of `toolgate::Effect`, with the variant each one names.
const EFFECTS: [(&str, &str); 6] = [
    ("read", "Read"),
    ("idempotent", "Idempotent"),
    ("write", "Write"),
    ("execute", "Execute"),
    ("destructive", "Destructive"),
    ("external", "External"),
];

/// Derives `toolgate::ToolMeta` from the struct's name, doc comment and
/// `#[tool(...)]` attribute. See the crate docs for the keys.
#[proc_macro_derive(Tool, attributes(tool))]
pub fn derive_tool(input: TokenStream) -> TokenStream {
    expand(parse_macro_input!(input as DeriveInput)).into()
}

fn expand(input: DeriveInput) -> TokenStream2 {
    let mut errors = Errors::default();
    match &input.data {
        Data::Struct(_) => {}
        Data::Enum(data) => errors.push(syn::Error::new(
            data.enum_token.span,
            "#[derive(Tool)] works on structs only: a tool is a struct that also implements ToolHandler",
        )),
        Data::Union(data) => errors.push(syn::Error::new(
            data.union_token.span,
            "#[derive(Tool)] works on structs only: a tool is a struct that also implements ToolHandler",
        )),
    }

    let attrs = attr::parse(&input.attrs, &mut errors);
    let ident = &input.ident;

    let name = match &attrs.name {
        Some(lit) => {
            let value = lit.value();
            if let Err(why) = name::validate(&value) {
                errors.push(syn::Error::new(lit.span(), why));
            }
            value
        }
        None => {
            let value = ident.unraw().to_string().to_snake_case();
            if let Err(why) = name::validate(&value) {
                errors.push(syn::Error::new(
                    ident.span(),
                    format!(
                        "{why}\n(`{}` becomes the tool name `{value}`; rename the struct or set #[tool(name = \"...\")])",
                        ident.unraw()
                    ),
                ));
            }
            value
        }
    };

    let description = match &attrs.description {
        Some(lit) => {
            let value = lit.value();
            if value.trim().is_empty() {
                errors.push(syn::Error::new(
                    lit.span(),
                    "the description is empty; say what the tool does, for the model",
                ));
            }
            value
        }
        None => {
            let value = doc::text(&input.attrs);
            if value.is_empty() && !attrs.attempted.contains(&"description") {
                errors.push(syn::Error::new(
                    ident.span(),
                    format!(
                        "`{ident}` has no description; the model needs one to pick the tool: \
                         add a doc comment (`/// What the tool does.`) or #[tool(description = \"...\")]"
                    ),
                ));
            }
            value
        }
    };

    let effect = match &attrs.effect {
        Some(lit) => effect_variant(lit, &mut errors),
        None if attrs.attempted.contains(&"effect") => None,
        None => {
            errors.push(syn::Error::new(
                ident.span(),
                "every tool must declare its effect: add #[tool(effect = \"read\")] \
                 (or \"idempotent\", \"write\", \"execute\", \"destructive\", \"external\"); \
                 retries and consent depend on it",
            ));
            None
        }
    };

    let krate = match &attrs.krate {
        Some(lit) => match lit.parse::<syn::Path>() {
            Ok(path) => Some(path),
            Err(_) => {
                errors.push(syn::Error::new(
                    lit.span(),
                    format!(
                        "`{}` is not a path; write the path to the toolgate crate, as in crate = \"toolgate\"",
                        lit.value()
                    ),
                ));
                None
            }
        },
        None => Some(syn::parse_quote!(::toolgate)),
    };

    // On errors, still write the impl (with placeholders) when the crate path is
    // known, so the only errors the user sees are ours, not "ToolMeta is not
    // implemented" cascading from every use of the type.
    let impl_block = krate.map(|krate| {
        let effect = effect.unwrap_or_else(|| format_ident!("External"));
        let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
        quote! {
            #[automatically_derived]
            impl #impl_generics #krate::ToolMeta for #ident #ty_generics #where_clause {
                const NAME: &'static str = #name;
                const DESCRIPTION: &'static str = #description;
                const EFFECT: #krate::Effect = #krate::Effect::#effect;
            }
        }
    });

    let errors = errors.finish().map(|e| e.to_compile_error());
    quote! { #impl_block #errors }
}

/// The `Effect` variant an `effect = "..."` literal names, or an error on the literal.
fn effect_variant(lit: &LitStr, errors: &mut Errors) -> Option<syn::Ident> {
    let value = lit.value();
    if let Some((_, variant)) = EFFECTS.iter().find(|(spelling, _)| *spelling == value) {
        return Some(syn::Ident::new(variant, Span::call_site()));
    }
    let spellings = EFFECTS.map(|(spelling, _)| spelling);
    let hint = match errors::closest(&value, &spellings) {
        Some(close) => format!("; did you mean \"{close}\"?"),
        None => String::new(),
    };
    let listed = spellings.map(|s| format!("\"{s}\"")).join(", ");
    errors.push(syn::Error::new(
        lit.span(),
        format!("unknown effect \"{value}\"{hint}\nthe effects are {listed}"),
    ));
    None
}
