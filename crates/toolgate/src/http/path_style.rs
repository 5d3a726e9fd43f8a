//! A path placeholder's value written in OpenAPI's path styles (the Style Values
//! and Style Examples of OpenAPI 3.1, which follow RFC 6570's simple `{x}`, label
//! `{.x}` and path-style `{;x}` expansions).
//!
//! Every name, item, key and member value is percent-encoded but for the
//! unreserved characters (`A-Z a-z 0-9 - . _ ~`), as RFC 6570 expands them: `/`,
//! `?`, `#`, `;`, `,` and `=` in a value are sent encoded, so a value never leaves
//! its segment nor reads as a delimiter. (`allowReserved` is OpenAPI's for query
//! parameters only.) An undefined value — `null`, an empty list or object — is
//! written as nothing, a `null` item or member is left out, and the empty string
//! is `.` in `label` and `;name` in `matrix`.

use serde_json::Value;
use toolgate_core::spec::PathStyle;

use super::encode::{as_text, encode_component};

/// `value` written in `style` as the path parameter `name`, encoded.
pub(crate) fn styled_path(name: &str, value: &Value, style: PathStyle, explode: bool) -> String {
    let enc = |v: &Value| encode_component(&as_text(v));
    let name = encode_component(name);
    // What goes before each part, and between parts when they are not exploded.
    let prefix = match style {
        PathStyle::Simple => String::new(),
        PathStyle::Label => ".".to_owned(),
        PathStyle::Matrix => format!(";{name}="),
    };
    match value {
        Value::Null => String::new(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().filter(|v| !v.is_null()).map(enc).collect();
            if items.is_empty() {
                return String::new();
            }
            match (style, explode) {
                (PathStyle::Simple, _) => items.join(","),
                (_, true) => items.iter().map(|i| format!("{prefix}{i}")).collect(),
                (_, false) => format!("{prefix}{}", items.join(",")),
            }
        }
        Value::Object(members) => {
            let members: Vec<(String, String)> = members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (encode_component(k), enc(v)))
                .collect();
            if members.is_empty() {
                return String::new();
            }
            if explode {
                let pairs = members.iter().map(|(k, v)| format!("{k}={v}"));
                match style {
                    PathStyle::Simple => pairs.collect::<Vec<_>>().join(","),
                    PathStyle::Label => pairs.map(|p| format!(".{p}")).collect(),
                    PathStyle::Matrix => pairs.map(|p| format!(";{p}")).collect(),
                }
            } else {
                let flat: Vec<String> = members.into_iter().flat_map(|(k, v)| [k, v]).collect();
                format!("{prefix}{}", flat.join(","))
            }
        }
        scalar => {
            let text = enc(scalar);
            match style {
                // RFC 6570: `{;x}` with the empty string is `;x`, without `=`.
                PathStyle::Matrix if text.is_empty() => format!(";{name}"),
                _ => format!("{prefix}{text}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rows of OpenAPI 3.1's Style Examples table for the path styles, for a
    /// parameter `color` that is the empty string, `"blue"`, `["blue", "black",
    /// "brown"]` or `{"R": 100, "G": 200, "B": 150}`.
    fn table() -> String {
        let values = [
            json!(""),
            json!("blue"),
            json!(["blue", "black", "brown"]),
            json!({"R": 100, "G": 200, "B": 150}),
        ];
        let mut out = String::from("style | explode | empty | string | array | object\n");
        for style in [PathStyle::Matrix, PathStyle::Label, PathStyle::Simple] {
            for explode in [false, true] {
                let cells: Vec<String> = values
                    .iter()
                    .map(|v| match styled_path("color", v, style, explode) {
                        empty if empty.is_empty() => "_empty_".to_owned(),
                        text => text,
                    })
                    .collect();
                out.push_str(&format!(
                    "{} | {explode} | {}\n",
                    style.as_str(),
                    cells.join(" | ")
                ));
            }
        }
        out
    }

    #[test]
    fn every_path_row_of_the_specifications_style_examples() {
        insta::assert_snapshot!(table(), @r"
        style | explode | empty | string | array | object
        matrix | false | ;color | ;color=blue | ;color=blue,black,brown | ;color=R,100,G,200,B,150
        matrix | true | ;color | ;color=blue | ;color=blue;color=black;color=brown | ;R=100;G=200;B=150
        label | false | . | .blue | .blue,black,brown | .R,100,G,200,B,150
        label | true | . | .blue | .blue.black.brown | .R=100.G=200.B=150
        simple | false | _empty_ | blue | blue,black,brown | R,100,G,200,B,150
        simple | true | _empty_ | blue | blue,black,brown | R=100,G=200,B=150
        ");
    }

    #[test]
    fn reserved_characters_and_delimiters_in_values_are_encoded() {
        let list = json!(["a/b", "c;d", "e,f", "g=h", "i j"]);
        assert_eq!(
            styled_path("id", &list, PathStyle::Matrix, true),
            ";id=a%2Fb;id=c%3Bd;id=e%2Cf;id=g%3Dh;id=i%20j"
        );
        assert_eq!(
            styled_path("id", &list, PathStyle::Label, false),
            ".a%2Fb,c%3Bd,e%2Cf,g%3Dh,i%20j"
        );
        let object = json!({"k;1": "v=2", "n": "?#"});
        assert_eq!(
            styled_path("id", &object, PathStyle::Matrix, true),
            ";k%3B1=v%3D2;n=%3F%23"
        );
        assert_eq!(
            styled_path("user id", &json!(5), PathStyle::Matrix, false),
            ";user%20id=5"
        );
    }

    #[test]
    fn undefined_values_are_written_as_nothing() {
        for style in [PathStyle::Matrix, PathStyle::Label, PathStyle::Simple] {
            for explode in [false, true] {
                for v in [json!(null), json!([]), json!({}), json!([null])] {
                    assert_eq!(styled_path("id", &v, style, explode), "", "{style:?} {v}");
                }
            }
        }
        assert_eq!(
            styled_path("id", &json!({"a": 1, "b": null}), PathStyle::Label, true),
            ".a=1"
        );
    }
}
