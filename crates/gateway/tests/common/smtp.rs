//! A local SMTP sink on a loopback port: it speaks enough SMTP for lettre, keeps every message it
//! accepts, counts every connection (a preview must cause none), and can answer the first
//! transactions with a temporary failure, as a relay that is briefly down does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub to: Vec<String>,
    pub data: String,
}

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    transactions: AtomicUsize,
    messages: Mutex<Vec<Received>>,
}

pub struct Sink {
    pub url: String,
    seen: Arc<Seen>,
}

impl Sink {
    pub async fn start() -> Sink {
        Sink::failing_first(0).await
    }

    /// A sink that answers `451` to the first `n` transactions.
    pub async fn failing_first(n: usize) -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("smtp://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let shared = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, shared.clone(), n));
            }
        });
        Sink { url, seen }
    }

    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    pub fn messages(&self) -> Vec<Received> {
        self.seen.messages.lock().unwrap().clone()
    }

    /// The messages received, once there are at least `n` (within ten seconds): a wait that ends
    /// on what it waits for, so that a later message is the marker that earlier ones are all in.
    pub async fn received(&self, n: usize) -> Vec<Received> {
        for _ in 0..1000 {
            let messages = self.messages();
            if messages.len() >= n {
                return messages;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!(
            "{} messages, not {n}, within ten seconds",
            self.messages().len()
        );
    }

    /// Every address a message was accepted for, sorted.
    pub fn recipients(&self) -> Vec<String> {
        let mut all: Vec<String> = self.messages().into_iter().flat_map(|m| m.to).collect();
        all.sort();
        all
    }
}

async fn serve(stream: TcpStream, seen: Arc<Seen>, failing: usize) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut to = Vec::new();
    if write.write_all(b"220 sink ESMTP\r\n").await.is_err() {
        return;
    }
    while let Ok(Some(line)) = lines.next_line().await {
        let verb = line.get(..4).unwrap_or(&line).to_ascii_uppercase();
        let answer: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250-sink\r\n250 8BITMIME\r\n",
            "MAIL" => {
                to.clear();
                if seen.transactions.fetch_add(1, Ordering::SeqCst) < failing {
                    b"451 4.3.0 try again later\r\n"
                } else {
                    b"250 OK\r\n"
                }
            }
            "RCPT" => {
                let address = line
                    .split_once('<')
                    .and_then(|(_, rest)| rest.split_once('>'))
                    .map(|(address, _)| address.to_owned())
                    .unwrap_or_default();
                to.push(address);
                b"250 OK\r\n"
            }
            "DATA" => {
                if write.write_all(b"354 go on\r\n").await.is_err() {
                    return;
                }
                let mut data = String::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    if line == "." {
                        break;
                    }
                    data.push_str(&line);
                    data.push('\n');
                }
                seen.messages.lock().unwrap().push(Received {
                    to: std::mem::take(&mut to),
                    data,
                });
                b"250 OK queued\r\n"
            }
            "QUIT" => {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => b"250 OK\r\n",
        };
        if write.write_all(answer).await.is_err() {
            return;
        }
    }
}

/// `user`'s address as if they changed it: after a plan ran, or before it runs.
pub async fn set_email(gw: &super::Gateway, user: &str, email: &str) {
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query("UPDATE users SET email = $1 WHERE id = $2")
        .bind(email)
        .bind(user)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
}
