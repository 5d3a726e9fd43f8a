//! Waiting on the other side of the worker's pipe: a short spin before sleeping.
//!
//! A program's tool call is a round trip between two processes: the worker sends
//! the call and waits, the gate runs it and answers, then waits for the next.
//! Each side that sleeps in `read` must be woken by the other, and on a virtual
//! machine waking a process on an idle CPU costs tens of microseconds, several
//! times the call itself. While a program makes its calls in a loop, each wait
//! is short, so each side first watches the pipe for a few microseconds and only
//! then sleeps: a burst of calls runs on two CPUs with no wake-ups at all.
//!
//! A wait the spin does not catch (a slow tool, a program computing between
//! calls) costs at most the spin in CPU time, and a program makes a bounded
//! number of calls (`max_calls`). There is no spin on one CPU, where it would
//! only keep the other side from running, and each turn of it yields the CPU
//! to any other runnable thread.

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};

/// How long a side watches the pipe before it sleeps, by default: longer than a
/// call through the gate's in-memory path and the interpreter's work between two
/// calls in a loop, short enough that a wait it does not catch wastes little.
const SPIN: Duration = Duration::from_micros(50);

/// The variable that sets the spin in microseconds (`0` turns it off, for a
/// gateway that shares its CPUs with busier work); the gate passes it on to
/// its workers.
pub(super) const SPIN_ENV: &str = "TOOLGATE_CODE_SPIN_MICROS";

/// The spin this process uses: [`SPIN_ENV`]'s, else [`SPIN`]; `None` when it
/// is turned off or the process may run on only one CPU.
fn process_spin() -> Option<Duration> {
    static SPIN_HERE: OnceLock<Option<Duration>> = OnceLock::new();
    *SPIN_HERE.get_or_init(|| {
        let spin = std::env::var(SPIN_ENV)
            .ok()
            .and_then(|micros| micros.trim().parse().ok())
            .map_or(SPIN, Duration::from_micros);
        let several_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        (several_cpus && !spin.is_zero()).then_some(spin)
    })
}

/// Waits up to `spin` for `fd` to be readable; the caller then reads it as
/// usual (at once, if this saw data).
fn watch(fd: BorrowedFd<'_>, spin: Duration) {
    if readable(fd) {
        return;
    }
    let started = Instant::now();
    while started.elapsed() < spin && !readable(fd) {
        std::thread::yield_now();
    }
}

/// A pipe end whose every read first watches it for the spin: wrapped in a
/// buffered reader, a read reaches it only once the buffer is empty, that is
/// when the other side has not yet answered.
#[derive(Debug)]
pub(super) struct Watched<R> {
    inner: R,
    /// How long to watch; `None` on one CPU or when turned off.
    spin: Option<Duration>,
    /// An asynchronous read is under way (it spun on its first poll).
    waiting: bool,
}

impl<R> Watched<R> {
    pub(super) fn new(inner: R) -> Self {
        Watched {
            inner,
            spin: process_spin(),
            waiting: false,
        }
    }
}

impl<R: Read + AsFd> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(spin) = self.spin {
            watch(self.inner.as_fd(), spin);
        }
        self.inner.read(buf)
    }
}

impl<R: AsyncRead + AsFd + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let (false, Some(spin)) = (this.waiting, this.spin) {
            watch(this.inner.as_fd(), spin);
        }
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.waiting = read.is_pending();
        read
    }
}

/// Whether `fd` has data (or its writer closed it) now, without waiting.
fn readable(fd: BorrowedFd<'_>) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `poll` reads and writes the one pollfd it is given, for no time.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_watch_ends_as_soon_as_the_pipe_has_data_and_else_after_the_spin() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(b"x").unwrap();
        let started = Instant::now();
        watch(reader.as_fd(), Duration::from_secs(60));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "data was there"
        );

        let (empty, _writer) = std::io::pipe().unwrap();
        let started = Instant::now();
        watch(empty.as_fd(), Duration::from_millis(20));
        assert!(
            started.elapsed() >= Duration::from_millis(20),
            "it watched the whole spin"
        );
    }

    #[test]
    fn a_watched_pipe_reads_what_was_written() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut watched = Watched::new(reader);
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            writer.write_all(b"late").unwrap();
        });
        let mut read = [0u8; 4];
        watched.read_exact(&mut read).unwrap();
        late.join().unwrap();
        assert_eq!(&read, b"late");
    }
}
