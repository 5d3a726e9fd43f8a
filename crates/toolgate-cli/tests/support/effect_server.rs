//! A tool server on loopback with an effect the tests can count: every request it
//! reads in full is one execution (a payment made). It answers `{"ok": true}`, or,
//! switched to [`Mode::LoseResponse`], reads and counts the request and closes the
//! connection without a word, so the caller cannot know whether the payment
//! happened. [`Mode::BreakOff`] answers the status line and headers and then
//! closes mid-body. [`EffectServer::set_delay`] makes it answer slowly.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with the next requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Counts the request and answers `200 {"ok": true}`.
    Answer = 0,
    /// Counts the request (read in full) and closes the connection unanswered.
    LoseResponse = 1,
    /// Counts the request, sends `200` with a `Content-Length` longer than the
    /// body it writes, and closes.
    BreakOff = 2,
}

/// What the server answers in [`Mode::Answer`].
pub const OK: &str = r#"{"ok": true}"#;

/// A running effect server (its threads end with the test process).
#[derive(Clone)]
pub struct EffectServer {
    pub port: u16,
    hits: Arc<AtomicUsize>,
    mode: Arc<AtomicU8>,
    delay_ms: Arc<AtomicU64>,
    requests: Arc<Mutex<Vec<Request>>>,
}

/// A request the server read: its head (request line and headers, lowercased)
/// and its body.
#[derive(Clone, Debug)]
pub struct Request {
    pub head: String,
    pub body: String,
}

impl EffectServer {
    /// A server on `127.0.0.1`, on a port of its own, answering.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Self {
            port: listener.local_addr().unwrap().port(),
            hits: Arc::new(AtomicUsize::new(0)),
            mode: Arc::new(AtomicU8::new(Mode::Answer as u8)),
            delay_ms: Arc::new(AtomicU64::new(0)),
            requests: Arc::new(Mutex::new(Vec::new())),
        };
        let shared = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let server = shared.clone();
                std::thread::spawn(move || server.exchange(stream));
            }
        });
        server
    }

    /// The URL a tool binds to.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/pay", self.port)
    }

    /// How many requests reached it: executions of the effect.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The requests that reached it, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the requests that reached it, in order.
    pub fn bodies(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    pub fn set_mode(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// Answers (in [`Mode::Answer`]) only `delay` after reading a request.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(u64::try_from(delay.as_millis()).unwrap(), Ordering::SeqCst);
    }

    fn mode(&self) -> Mode {
        match self.mode.load(Ordering::SeqCst) {
            0 => Mode::Answer,
            1 => Mode::LoseResponse,
            _ => Mode::BreakOff,
        }
    }

    /// One request on `stream`: read in full, counted, then answered as the mode says.
    fn exchange(&self, mut stream: TcpStream) {
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
        let Some(request) = read_request(&mut stream) else {
            return;
        };
        let mode = self.mode();
        self.requests.lock().unwrap().push(request);
        self.hits.fetch_add(1, Ordering::SeqCst);
        match mode {
            Mode::Answer => {
                std::thread::sleep(Duration::from_millis(self.delay_ms.load(Ordering::SeqCst)));
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{OK}",
                    OK.len()
                );
            }
            Mode::LoseResponse => {}
            Mode::BreakOff => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 64\r\nConnection: close\r\n\r\n{{\"ok\": tr"
                );
                let _ = stream.flush();
            }
        }
        let _ = stream.shutdown(Shutdown::Both);
    }
}

/// Reads one HTTP/1.1 request (headers, then a `Content-Length` or chunked
/// body), or `None` when the connection ends first.
fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = head.contains("transfer-encoding: chunked");
    loop {
        let body = &request[head_end..];
        let complete = match length {
            Some(length) => body.len() >= length,
            None if chunked => body.ends_with(b"0\r\n\r\n"),
            None => true,
        };
        if complete {
            return Some(Request {
                head,
                body: String::from_utf8_lossy(body).into_owned(),
            });
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
}
