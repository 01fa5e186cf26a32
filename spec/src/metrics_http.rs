//! `spotagg switch --metrics ADDR`: the switch's metrics (docs/switch.md §4, §6, §7) in the
//! Prometheus text exposition format, over HTTP.
//!
//! The serve threads publish their engine's families ([`spotagg_driver::Engine::metrics`]) on
//! a [`MetricsBoard`] a few times a second and when they stop; [`serve_http`] answers
//! `GET /metrics` (and `GET /`) with the families of every thread merged
//! ([`spotagg_driver::metrics::merge`]) plus the serve statistics, and anything else with 404.
//! One request a connection, `Connection: close`; a client gets 2 s to send its request.

use spotagg_driver::metrics::{merge, render, Family};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The latest families of each serve thread.
#[derive(Debug, Default)]
pub struct MetricsBoard {
    threads: Mutex<Vec<Vec<Family>>>,
}

impl MetricsBoard {
    /// A board for `threads` serve threads.
    pub fn new(threads: usize) -> MetricsBoard {
        MetricsBoard { threads: Mutex::new(vec![Vec::new(); threads]) }
    }
    /// Thread `t` publishes its families.
    pub fn publish(&self, t: usize, families: Vec<Family>) {
        let mut g = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if t >= g.len() {
            g.resize(t + 1, Vec::new());
        }
        g[t] = families;
    }
    /// Every thread's families merged, as exposition text.
    pub fn render(&self) -> String {
        let g = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        render(&merge(&g))
    }
}

/// Answers HTTP requests on `listener` until `stop` is set (checked every 100 ms).
pub fn serve_http(listener: &TcpListener, board: &MetricsBoard, stop: &AtomicBool) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                // A failing client must not stop the server.
                let _ = answer(conn, board);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn answer(mut conn: TcpStream, board: &MetricsBoard) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut req = Vec::with_capacity(512);
    let mut buf = [0u8; 512];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        let got = conn.read(&mut buf)?;
        if got == 0 {
            break;
        }
        req.extend_from_slice(&buf[..got]);
    }
    let line = String::from_utf8_lossy(&req);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = if method == "GET" && (path == "/metrics" || path == "/") {
        ("200 OK", board.render())
    } else {
        ("404 Not Found", "not found: GET /metrics\n".to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}
