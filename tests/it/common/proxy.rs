//! A loopback TCP proxy between a PostgreSQL client and its server that cuts a connection at a
//! chosen point of the protocol, for the dropped-connection tests.
//!
//! The proxy relays bytes both ways and reads the client's stream as PostgreSQL frontend
//! messages (an untyped startup message, then a type byte and a length each) and the server's
//! as backend messages, so that a cut lands at a point named by the protocol, not by a timer:
//! in the middle of the data of a statement, just before a `COMMIT` reaches the server, or just
//! after the server has committed but before its answer reaches the client. Each armed cut
//! strikes once, in the order armed, on whichever connection reaches its point first; a cut
//! closes both sides of that connection. Plain connections only (`sslmode=disable`, the
//! default of a URL without one). Everything stays on 127.0.0.1.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where an armed cut strikes.
#[derive(Clone, Debug, PartialEq)]
pub enum Cut {
    /// In the middle of the client's first `Bind` message (a statement's data: for a batch,
    /// its rows) after a `Parse` whose SQL contains this text: half of the message reaches the
    /// server, then both sides are closed.
    MidBind(&'static str),
    /// The client's next simple-query `COMMIT` never reaches the server: both sides are closed
    /// instead.
    BeforeCommit,
    /// The client's next `COMMIT` reaches the server; the server's answer is read (the commit
    /// is done) and not passed on: both sides are closed instead.
    AfterCommit,
    /// The next message the client sends whose bytes contain this text (a `Query` or `Parse`
    /// naming a table, say) never reaches the server: both sides are closed instead.
    BeforeMessage(&'static str),
}

struct Shared {
    server: SocketAddr,
    /// The cuts armed, in the order they strike.
    armed: Mutex<VecDeque<Cut>>,
    /// The cuts made so far, in order.
    struck: Mutex<Vec<Cut>>,
    /// The `COMMIT`s the server completed on the proxy's connections, answered or not.
    commits: AtomicU64,
}

/// A running proxy; it stops accepting when dropped (connections already open go on until
/// either side closes).
pub struct CutProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

impl CutProxy {
    /// A proxy on a free loopback port in front of the server at `server` (host:port).
    pub fn start(server: SocketAddr) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            server,
            armed: Mutex::new(VecDeque::new()),
            struck: Mutex::new(Vec::new()),
            commits: AtomicU64::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let shared = shared.clone();
                    std::thread::spawn(move || relay(client, &shared));
                }
            });
        }
        CutProxy { addr, shared, stop }
    }

    /// `url` (a `postgres://` URL of the proxied server) with its host and port replaced by
    /// the proxy's.
    pub fn url(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let host_at = authority.rfind('@').map_or(0, |i| i + 1);
        format!("{scheme}://{}{}{path}", &authority[..host_at], self.addr)
    }

    /// Arms `cut`, after the cuts already armed: the first connection to reach its point once
    /// those have struck is cut there.
    pub fn arm(&self, cut: Cut) {
        self.shared.armed.lock().unwrap().push_back(cut);
    }

    /// The cuts made so far.
    pub fn struck(&self) -> Vec<Cut> {
        self.shared.struck.lock().unwrap().clone()
    }

    /// How many transactions the server committed on the proxy's connections so far (its
    /// `CommandComplete` answers to `COMMIT`, the one a cut kept from the client included).
    pub fn commits(&self) -> u64 {
        self.shared.commits.load(Ordering::SeqCst)
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// The server's address in a `postgres://` URL.
pub fn server_addr(url: &str) -> SocketAddr {
    let rest = url.split_once("://").expect("a postgres:// URL").1;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let host_port = &authority[authority.rfind('@').map_or(0, |i| i + 1)..];
    let host_port = host_port.replace("localhost", "127.0.0.1");
    host_port
        .parse()
        .unwrap_or_else(|e| panic!("{host_port}: not an IP address and port: {e}"))
}

/// Takes the next armed cut if `pred` says this is its point.
fn take_if(shared: &Shared, pred: impl Fn(&Cut) -> bool) -> Option<Cut> {
    let mut armed = shared.armed.lock().unwrap();
    if armed.front().is_some_and(pred) {
        let cut = armed.pop_front();
        shared.struck.lock().unwrap().extend(cut.clone());
        cut
    } else {
        None
    }
}

fn close(a: &TcpStream, b: &TcpStream) {
    let _ = a.shutdown(Shutdown::Both);
    let _ = b.shutdown(Shutdown::Both);
}

/// Reads one message: the whole of it (type byte, if any, length and body).
fn read_message(from: &mut TcpStream, typed: bool) -> Option<Vec<u8>> {
    let head = if typed { 5 } else { 4 };
    let mut msg = vec![0u8; head];
    from.read_exact(&mut msg).ok()?;
    let len = u32::from_be_bytes(msg[head - 4..head].try_into().unwrap()) as usize;
    msg.resize(head - 4 + len, 0);
    from.read_exact(&mut msg[head..]).ok()?;
    Some(msg)
}

/// Relays one client connection, cutting it where the armed cut says.
fn relay(client: TcpStream, shared: &Arc<Shared>) {
    let Ok(server) = TcpStream::connect(shared.server) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // Set when the client's COMMIT has gone to the server under an `AfterCommit` cut: the server
    // side then reads the answer and closes instead of passing it on.
    let swallow_commit = Arc::new(AtomicBool::new(false));
    {
        let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
        let swallow = swallow_commit.clone();
        let commits = shared.clone();
        std::thread::spawn(move || {
            while let Some(msg) = read_message(&mut from, true) {
                let committed = msg[0] == b'C' && msg[5..].starts_with(b"COMMIT");
                if committed {
                    commits.commits.fetch_add(1, Ordering::SeqCst);
                }
                if swallow.load(Ordering::SeqCst) {
                    // The commit is done; its answer is lost.
                    if committed {
                        close(&from, &to);
                        return;
                    }
                    continue;
                }
                if to.write_all(&msg).is_err() {
                    break;
                }
            }
            close(&from, &to);
        });
    }
    let (mut from, mut to) = (client, server);
    // The startup phase: untyped messages until the startup message proper (an SSL or GSS
    // request is answered by the server with one byte, relayed by the other thread).
    loop {
        let Some(msg) = read_message(&mut from, false) else {
            return close(&from, &to);
        };
        let code = u32::from_be_bytes(msg[4..8].try_into().unwrap());
        if to.write_all(&msg).is_err() {
            return close(&from, &to);
        }
        if code != 80_877_103 && code != 80_877_104 {
            break;
        }
    }
    let mut after_parse = false;
    while let Some(msg) = read_message(&mut from, true) {
        let is_commit = msg[0] == b'Q' && msg[5..].starts_with(b"COMMIT");
        if msg[0] == b'P' {
            after_parse = take_if(
                shared,
                |c| matches!(c, Cut::MidBind(t) if contains(&msg, t)),
            )
            .is_some()
                || after_parse;
        }
        if after_parse && msg[0] == b'B' {
            let _ = to.write_all(&msg[..msg.len() / 2]);
            let _ = to.flush();
            return close(&from, &to);
        }
        if is_commit && take_if(shared, |c| *c == Cut::BeforeCommit).is_some() {
            return close(&from, &to);
        }
        if take_if(
            shared,
            |c| matches!(c, Cut::BeforeMessage(t) if contains(&msg, t)),
        )
        .is_some()
        {
            return close(&from, &to);
        }
        if is_commit && take_if(shared, |c| *c == Cut::AfterCommit).is_some() {
            swallow_commit.store(true, Ordering::SeqCst);
        }
        if to.write_all(&msg).is_err() {
            break;
        }
    }
    close(&from, &to);
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}
