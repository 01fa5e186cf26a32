//! The daemon's output off the protocol path: its log lines and its status file are written by
//! a thread of their own, so that no write to a file can hold up a PDU or a timer.
//!
//! The namespace ring showed why (docs/eaps.md §10): while another process copied 6 GB, the
//! kernel throttled every writer of dirty pages (`balance_dirty_pages` sleeps a writer for up
//! to 200 ms at a time), the daemons that then printed a transition line or rewrote their
//! status file stopped forwarding HEALTH with them, and both masters' 300 ms fail timers
//! expired on intact rings: 395,530 frames looped. The main loop now only queues text here.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

enum Msg {
    Line(String),
    Status(Vec<u8>),
}

/// The writer thread's handle.
pub struct Report {
    tx: Option<Sender<Msg>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Report {
    /// Starts the thread that writes lines to standard output and the status to `status_file`
    /// (through `status_file.tmp` and a rename, so a reader never sees half of it).
    pub fn start(status_file: PathBuf) -> Report {
        let (tx, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("eaps-report".into())
            .spawn(move || write_all(rx, status_file))
            .expect("cannot start the daemon's report thread");
        Report { tx: Some(tx), thread: Some(thread) }
    }

    /// Queues a log line.
    pub fn line(&self, line: String) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Line(line));
        }
    }

    /// Queues a status document; only the newest of those waiting is written.
    pub fn status(&self, json: Vec<u8>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Status(json));
        }
    }

    /// Writes everything queued and stops the thread; the first write error, if any.
    pub fn finish(&mut self) -> Result<()> {
        drop(self.tx.take());
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the report thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn write_all(rx: Receiver<Msg>, status_file: PathBuf) -> Result<()> {
    let tmp = {
        let mut s = status_file.as_os_str().to_owned();
        s.push(".tmp");
        PathBuf::from(s)
    };
    let mut first_err: Option<anyhow::Error> = None;
    while let Ok(first) = rx.recv() {
        // Everything waiting: lines in order, the last status only.
        let mut status = None;
        let mut out = std::io::stdout().lock();
        for m in std::iter::once(first).chain(rx.try_iter()) {
            match m {
                Msg::Line(l) => {
                    let _ = writeln!(out, "{l}");
                }
                Msg::Status(s) => status = Some(s),
            }
        }
        let _ = out.flush();
        drop(out);
        if let Some(s) = status {
            let r = std::fs::write(&tmp, s).with_context(|| format!("writing {}", tmp.display())).and_then(|_| {
                std::fs::rename(&tmp, &status_file).with_context(|| format!("writing {}", status_file.display()))
            });
            if let Err(e) = r {
                eprintln!("spotagg eaps: {e:#}");
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_status_is_written_and_finish_reports_errors() {
        let dir = std::env::temp_dir().join(format!("spotagg-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.json");
        let mut r = Report::start(file.clone());
        for i in 0..100 {
            r.status(format!("{{\"n\": {i}}}").into_bytes());
        }
        r.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"n\": 99}");
        std::fs::remove_dir_all(&dir).unwrap();

        let mut bad = Report::start(dir.join("no-such-dir").join("s.json"));
        bad.status(b"{}".to_vec());
        let e = bad.finish().unwrap_err();
        assert!(format!("{e:#}").contains("no-such-dir"), "{e:#}");
    }
}
