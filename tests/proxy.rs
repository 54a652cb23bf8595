//! A TCP proxy that misbehaves on purpose: it drops connections, cuts them after the request
//! went through (so the gateway acts but the client never hears), delays them, refuses the event
//! stream, kills every open connection on demand, and plays a gateway that is gone.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

#[derive(Default)]
pub struct Counters {
    pub dropped: AtomicUsize,
    pub cut: AtomicUsize,
    pub delayed: AtomicUsize,
    pub passed: AtomicUsize,
}

#[derive(Default)]
struct Switches {
    faults: AtomicBool,
    block_events: AtomicBool,
    down: AtomicBool,
}

pub struct FaultProxy {
    pub url: String,
    switches: Arc<Switches>,
    live: Arc<Mutex<Vec<AbortHandle>>>,
    pub counters: Arc<Counters>,
}

enum Mode {
    Drop,
    Cut,
    Delay(Duration),
    Pass,
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream` (`host:port`). The faults come
    /// from a generator seeded by `COUNTERSIGN_FAULT_SEED`, or at random; the seed is printed, so a
    /// failing run shows how to draw the same faults again (in the same connection order).
    pub async fn start(upstream: &str) -> anyhow::Result<FaultProxy> {
        let seed = match std::env::var("COUNTERSIGN_FAULT_SEED") {
            Ok(text) => text
                .parse()
                .map_err(|_| anyhow::anyhow!("COUNTERSIGN_FAULT_SEED is not a number: {text:?}"))?,
            Err(_) => rand::random::<u64>(),
        };
        eprintln!("fault proxy: COUNTERSIGN_FAULT_SEED={seed}");
        let mut dice = StdRng::seed_from_u64(seed);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let switches = Arc::new(Switches::default());
        let live = Arc::new(Mutex::new(Vec::<AbortHandle>::new()));
        let counters = Arc::new(Counters::default());
        let upstream = upstream.to_owned();
        let (s, l, c) = (switches.clone(), live.clone(), counters.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if s.down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let mode = if s.faults.load(Ordering::SeqCst) {
                    match dice.gen_range(0..100) {
                        0..15 => Mode::Drop,
                        15..35 => Mode::Cut,
                        35..55 => Mode::Delay(Duration::from_millis(dice.gen_range(50..400))),
                        _ => Mode::Pass,
                    }
                } else {
                    Mode::Pass
                };
                let task =
                    tokio::spawn(serve(client, upstream.clone(), mode, s.clone(), c.clone()));
                let mut live = l.lock().unwrap();
                live.retain(|h| !h.is_finished());
                live.push(task.abort_handle());
            }
        });
        Ok(FaultProxy {
            url,
            switches,
            live,
            counters,
        })
    }

    pub fn faults(&self, on: bool) {
        self.switches.faults.store(on, Ordering::SeqCst);
    }

    pub fn block_events(&self, on: bool) {
        self.switches.block_events.store(on, Ordering::SeqCst);
    }

    /// A gateway gone (`true`) or back: while it is gone, the connections open now close and new
    /// ones close as soon as they are accepted.
    pub fn down(&self, on: bool) {
        self.switches.down.store(on, Ordering::SeqCst);
        if on {
            self.kill_all();
        }
    }

    /// Closes every connection open right now.
    pub fn kill_all(&self) {
        for handle in self.live.lock().unwrap().drain(..) {
            handle.abort();
        }
    }
}

async fn serve(
    mut client: TcpStream,
    upstream: String,
    mode: Mode,
    switches: Arc<Switches>,
    counters: Arc<Counters>,
) {
    let mut first = vec![0u8; 64 * 1024];
    let n = match client.read(&mut first).await {
        Ok(0) | Err(_) => return,
        Ok(n) => n,
    };
    first.truncate(n);
    if switches.block_events.load(Ordering::SeqCst) && first.starts_with(b"GET /v1/events") {
        counters.dropped.fetch_add(1, Ordering::SeqCst);
        return;
    }
    let counter = match mode {
        Mode::Drop => {
            counters.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        Mode::Cut => &counters.cut,
        Mode::Delay(wait) => {
            tokio::time::sleep(wait).await;
            &counters.delayed
        }
        Mode::Pass => &counters.passed,
    };
    counter.fetch_add(1, Ordering::SeqCst);
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    if server.write_all(&first).await.is_err() {
        return;
    }
    if let Mode::Cut = mode {
        // Let the whole request through, then vanish before a byte of the answer arrives.
        let (mut from_client, _) = client.split();
        let (mut from_server, mut to_server) = server.split();
        let mut answer = [0u8; 1];
        tokio::select! {
            _ = tokio::io::copy(&mut from_client, &mut to_server) => {}
            _ = from_server.read(&mut answer) => {}
        }
        return;
    }
    if !switches.faults.load(Ordering::SeqCst) {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    // Under faults every connection carries one exchange, so each request meets the dice: the
    // connection closes as soon as the first answer is through.
    let (mut from_client, mut to_client) = client.split();
    let (mut from_server, mut to_server) = server.split();
    let upload = tokio::io::copy(&mut from_client, &mut to_server);
    let download = async {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_secs(30), from_server.read(&mut buffer)).await
            {
                Ok(Ok(n)) if n > 0 => {
                    if to_client.write_all(&buffer[..n]).await.is_err() {
                        return;
                    }
                    seen.extend_from_slice(&buffer[..n]);
                    if answer_complete(&seen) {
                        return;
                    }
                }
                _ => return,
            }
        }
    };
    tokio::select! {
        _ = upload => {}
        () = download => {}
    }
}

/// Whether `bytes` hold a whole HTTP response with a `content-length` (every JSON answer here).
fn answer_complete(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    bytes.len() >= end + 4 + length
}
