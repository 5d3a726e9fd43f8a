//! Reading `#[tool(...)]`: known keys, each once, each a string literal.

use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Token};

use crate::errors::{self, Errors};

/// The keys `#[tool(...)]` accepts, with an example of each for error messages.
const KEYS: [(&str, &str); 4] = [
    ("name", "name = \"create_ticket\""),
    ("description", "description = \"What the tool does.\""),
    ("effect", "effect = \"read\""),
    ("crate", "crate = \"toolgate\""),
];

/// The values given in `#[tool(...)]` attributes, as written.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub effect: Option<LitStr>,
    pub krate: Option<LitStr>,
    /// Keys that were meant but yielded no value (misspelled, or given a non-string),
    /// so that "missing key" errors do not repeat an error already reported.
    pub attempted: Vec<&'static str>,
}

/// Reads every `#[tool(...)]` on the item. Mistakes go to `errors`, each on the
/// offending token; reading goes on past them where the syntax allows.
pub(crate) fn parse(attrs: &[Attribute], errors: &mut Errors) -> ToolAttrs {
    let mut found = ToolAttrs::default();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("tool")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let (slot, (key, example)) = match key.as_str() {
                "name" => (&mut found.name, KEYS[0]),
                "description" => (&mut found.description, KEYS[1]),
                "effect" => (&mut found.effect, KEYS[2]),
                "crate" => (&mut found.krate, KEYS[3]),
                _ => {
                    let (error, meant) = unknown_key(&meta);
                    errors.push(error);
                    found.attempted.extend(meant);
                    skip_value(&meta)?;
                    return Ok(());
                }
            };
            let value = match take_value(&meta)? {
                Some(Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                })) => lit,
                Some(other) => {
                    // `effect = read` most likely wants quotes around the same word.
                    let example = match &other {
                        Expr::Path(path) if path.path.get_ident().is_some() => {
                            format!("{key} = \"{}\"", path.to_token_stream())
                        }
                        _ => example.to_owned(),
                    };
                    errors.push(syn::Error::new_spanned(
                        other,
                        format!("`{key}` takes a string literal, as in #[tool({example})]"),
                    ));
                    found.attempted.push(key);
                    return Ok(());
                }
                None => {
                    found.attempted.push(key);
                    errors.push(syn::Error::new_spanned(
                        &meta.path,
                        format!("`{key}` needs a value, as in #[tool({example})]"),
                    ));
                    return Ok(());
                }
            };
            if slot.is_some() {
                errors.push(syn::Error::new_spanned(
                    &meta.path,
                    format!("duplicate `{key}`: each #[tool(...)] key may be given once"),
                ));
            } else {
                *slot = Some(value);
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    found
}

/// The error for a key `#[tool(...)]` does not know, and the key it probably meant.
fn unknown_key(meta: &ParseNestedMeta) -> (syn::Error, Option<&'static str>) {
    let key = meta.path.to_token_stream().to_string().replace(' ', "");
    let names = KEYS.map(|(name, _)| name);
    let meant = errors::closest(&key, &names);
    let message = match meant {
        Some(close) => format!("unknown key `{key}` in #[tool(...)]; did you mean `{close}`?"),
        None => {
            let listed = names.map(|name| format!("`{name}`")).join(", ");
            format!("unknown key `{key}` in #[tool(...)]; the keys are {listed}")
        }
    };
    (syn::Error::new_spanned(&meta.path, message), meant)
}

/// The `= value` after a key, if there is one.
fn take_value(meta: &ParseNestedMeta) -> syn::Result<Option<Expr>> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
        return meta.input.parse().map(Some);
    }
    skip_value(meta)?;
    Ok(None)
}

/// Steps over whatever follows an unusable key (`= value` or `(...)`), so the keys
/// after it are still read.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
        meta.input.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}
