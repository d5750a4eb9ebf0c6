//! The log: one line per event on standard error, written by a thread of its own so that
//! no request ever waits for it. Lines wait in a bounded queue; when standard error does
//! not keep up (a full pipe nobody reads, a slow terminal) new lines are dropped and
//! counted (`rehome_log_lines_dropped_total`) rather than block the server.
//!
//! Not `tracing-appender`'s writer: it does the same with a bounded channel, but brings
//! eight crates (`time` and its macros among them) for these few lines.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

use crate::config::LogFormat;

/// Lines that may wait for standard error: a few megabytes at most.
pub const QUEUE_LINES: usize = 16 * 1024;

/// How long the end of the program waits for the queue to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Log lines dropped since the process started.
pub fn dropped_lines() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Logs go to standard error (standard output carries the CLI's answers); `RUST_LOG`
/// filters them. Keep the guard until the end: dropping it writes what is still queued.
pub fn init(format: LogFormat) -> LogGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, guard) = NonBlocking::new(QUEUE_LINES, io::stderr(), &DROPPED);
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    guard
}

enum Message {
    Line(Vec<u8>),
    /// Answered once every line queued before it is written.
    Flush(SyncSender<()>),
}

/// Hands each formatted line to the writing thread, or drops it when the queue is full.
#[derive(Clone)]
pub struct NonBlocking {
    queue: SyncSender<Message>,
    dropped: &'static AtomicU64,
}

impl NonBlocking {
    /// A writer queueing up to `capacity` lines for `out`, counting dropped ones in `dropped`.
    pub fn new(capacity: usize, out: impl Write + Send + 'static, dropped: &'static AtomicU64) -> (Self, LogGuard) {
        let (queue, lines) = mpsc::sync_channel(capacity);
        let spawned = std::thread::Builder::new().name("rehome-log".into()).spawn(move || write_lines(lines, out));
        if let Err(e) = spawned {
            // Without the thread every line is dropped (and counted); the server still runs.
            eprintln!("cannot start the log writer: {e}");
        }
        (Self { queue: queue.clone(), dropped }, LogGuard { queue })
    }
}

fn write_lines(lines: Receiver<Message>, mut out: impl Write) {
    for message in lines {
        match message {
            // A failing standard error loses the line; there is nowhere to report it.
            Message::Line(line) => drop(out.write_all(&line)),
            Message::Flush(done) => {
                let _ = out.flush();
                let _ = done.send(());
            }
        }
    }
}

impl<'a> MakeWriter<'a> for NonBlocking {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line(self)
    }
}

/// One event's writer: the formatter writes the whole line at once.
pub struct Line<'a>(&'a NonBlocking);

impl Write for Line<'_> {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        match self.0.queue.try_send(Message::Line(line.to_vec())) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.0.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes out the queued lines when dropped (waiting at most a couple of seconds: a
/// standard error nobody reads must not hold up the exit either).
pub struct LogGuard {
    queue: SyncSender<Message>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let deadline = Instant::now() + FLUSH_WAIT;
        let (done, flushed) = mpsc::sync_channel(1);
        let mut flush = Message::Flush(done);
        loop {
            match self.queue.try_send(flush) {
                Ok(()) => break,
                Err(TrySendError::Full(again)) if Instant::now() < deadline => {
                    flush = again;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return,
            }
        }
        let _ = flushed.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A standard error that takes nothing until opened, then records what it is given.
    #[derive(Clone)]
    struct Gate(Arc<(Mutex<Vec<u8>>, Mutex<()>)>);

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let _open = self.0 .1.lock().unwrap();
            self.0 .0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_standard_error_drops_and_counts_lines_instead_of_blocking() {
        static DROPPED: AtomicU64 = AtomicU64::new(0);
        let gate = Gate(Arc::default());
        let closed = gate.0 .1.lock().unwrap();
        let (writer, guard) = NonBlocking::new(4, gate.clone(), &DROPPED);
        // The writing thread takes one line and waits on the gate; four more fill the
        // queue; the rest are dropped at once.
        for n in 0..20 {
            writer.make_writer().write_all(format!("line {n}\n").as_bytes()).unwrap();
        }
        let dropped = DROPPED.load(Ordering::Relaxed);
        assert!((15..=16).contains(&dropped), "dropped {dropped}");
        drop(closed);
        drop(guard);
        let written = String::from_utf8(gate.0 .0.lock().unwrap().clone()).unwrap();
        assert!(written.starts_with("line 0\n"), "{written}");
        assert_eq!(written.lines().count() as u64, 20 - dropped, "every queued line written by the guard's end");
    }
}
