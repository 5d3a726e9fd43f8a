//! Server-sent events, as the HTML standard defines the `text/event-stream` format:
//! the events of a captured stream, for the stream parsers.
//!
//! Lines end in CRLF, LF or a lone CR; a line starting with `:` is a comment; a
//! field's value follows its name and a colon, less one leading space; the `data`
//! lines of an event are joined with `\n`; a blank line ends the event. One leniency:
//! an event the text ends in without its closing blank line is kept (a capture saved
//! without the final newline still holds its last event), where a live client would
//! drop it.

/// One event of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (`None` for the default, `message`).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The events of `text`, in order. Events without data are skipped, as the standard
/// says a client does.
pub fn sse_events(text: &str) -> Vec<SseEvent> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut events = Vec::new();
    let mut event: Option<String> = None;
    let mut data: Option<String> = None;
    let mut dispatch = |event: &mut Option<String>, data: &mut Option<String>| {
        if let Some(data) = data.take() {
            events.push(SseEvent {
                event: event.take(),
                data,
            });
        }
        *event = None;
    };
    for line in lines(text) {
        if line.is_empty() {
            dispatch(&mut event, &mut data);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" => event = Some(value.to_owned()),
            // `id` and `retry` steer reconnection, which a capture has no use for.
            _ => {}
        }
    }
    dispatch(&mut event, &mut data);
    events
}

/// Whether `text` looks like an event stream: some line is a `data:` field.
pub fn is_sse(text: &str) -> bool {
    lines(text.strip_prefix('\u{feff}').unwrap_or(text))
        .any(|line| line.starts_with("data:") || line == "data")
}

/// The lines of `text`, split at CRLF, LF or CR.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find(['\r', '\n']) {
            Some(at) => {
                let skip = if current[at..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = Some(&current[at + skip..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                // The text's last line, unless it is the empty rest after a final newline.
                (!current.is_empty()).then_some(current)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn data(text: &str) -> Vec<String> {
        sse_events(text).into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn every_line_ending_the_standard_allows_is_read() {
        for ending in ["\n", "\r\n", "\r"] {
            let text = ["data: {\"a\":1}", "", "event: x", "data: {\"b\":2}", "", ""].join(ending);
            assert_eq!(data(&text), ["{\"a\":1}", "{\"b\":2}"], "{ending:?}");
            assert_eq!(sse_events(&text)[1].event.as_deref(), Some("x"));
            assert!(is_sse(&text));
        }
    }

    #[test]
    fn data_lines_join_comments_and_other_fields_are_skipped() {
        let text = ": keep-alive\r\nid: 7\r\nretry: 100\r\ndata:{\"a\":\r\ndata:  1}\r\n\r\n";
        assert_eq!(data(text), ["{\"a\":\n 1}"]);
    }

    #[test]
    fn the_last_event_counts_without_its_blank_line_and_empty_events_do_not() {
        assert_eq!(data("event: ping\n\ndata: [DONE]"), ["[DONE]"]);
        assert_eq!(data("\u{feff}data: x\n"), ["x"]);
        assert_eq!(data(""), Vec::<String>::new());
        assert!(!is_sse("{\"data\": 1}\n"));
    }

    proptest! {
        #[test]
        fn events_written_with_any_line_endings_read_back(
            payloads in proptest::collection::vec("[^\r\n]{0,20}", 1..6),
            endings in proptest::collection::vec(prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 1..4),
        ) {
            let mut text = String::new();
            for (i, payload) in payloads.iter().enumerate() {
                let end = endings[i % endings.len()];
                text.push_str(&format!("data: {payload}{end}{end}"));
            }
            let read: Vec<String> = sse_events(&text).into_iter().map(|e| e.data).collect();
            prop_assert_eq!(read, payloads);
        }

        #[test]
        fn no_text_makes_the_reader_panic(text in "(data|event|:|id| |\r|\n|x|\u{feff}){0,40}") {
            let _ = sse_events(&text);
            let _ = is_sse(&text);
        }
    }
}
