//! One running app per data directory: the first start holds an OS lock on `instance.lock` there
//! and listens on `instance.sock`; a later start with the same directory hands its arguments to
//! it over that socket and exits. Two data directories (two approvers) run side by side, which a
//! lock per app identifier (a D-Bus name) would not allow.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

const LOCK: &str = "instance.lock";
/// The longest a later start may take to hand over its arguments, and their most bytes.
#[cfg(unix)]
const HANDOVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
#[cfg(unix)]
const HANDOVER_LIMIT: u64 = 64 * 1024;
#[cfg(unix)]
const SOCKET: &str = "instance.sock";

/// The outcome of starting: this process is the instance, or it passed its arguments on.
pub enum Claim {
    First(Instance),
    Forwarded,
}

/// Held for the life of the app: dropping it releases the data directory.
pub struct Instance {
    _lock: File,
    #[cfg(unix)]
    listener: Option<std::os::unix::net::UnixListener>,
    #[cfg(unix)]
    socket: PathBuf,
}

/// Takes the data directory for this process, or hands `args` to the process that has it.
pub fn claim(data_dir: &Path, args: &[String]) -> io::Result<Claim> {
    countersign_console::private_files::create_dir(data_dir)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join(LOCK))?;
    match lock.try_lock() {
        Ok(()) => Ok(Claim::First(Instance::listen(lock, data_dir))),
        Err(TryLockError::WouldBlock) => {
            forward(data_dir, args)?;
            Ok(Claim::Forwarded)
        }
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl Instance {
    #[cfg(unix)]
    fn listen(lock: File, data_dir: &Path) -> Instance {
        let socket = data_dir.join(SOCKET);
        // A socket file left by a crashed instance: the lock says nobody listens on it.
        let _ = fs::remove_file(&socket);
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .inspect_err(|e| {
                tracing::warn!(error = %e, path = %socket.display(),
                    "a second start cannot hand over its arguments")
            })
            .ok();
        Instance {
            _lock: lock,
            listener,
            socket,
        }
    }

    #[cfg(not(unix))]
    fn listen(lock: File, _data_dir: &Path) -> Instance {
        Instance { _lock: lock }
    }

    /// Calls `on_args` with each later start's arguments, on a thread of its own.
    #[cfg(unix)]
    pub fn serve(&mut self, on_args: impl Fn(Vec<String>) + Send + 'static) {
        use std::io::Read;
        let Some(listener) = self.listener.take() else {
            return;
        };
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut text = String::new();
                // Any local process may connect: one that sends nothing, or sends without end,
                // holds the hand-over for a moment and never more.
                let read = stream.and_then(|s| {
                    s.set_read_timeout(Some(HANDOVER_TIMEOUT))?;
                    s.take(HANDOVER_LIMIT).read_to_string(&mut text)
                });
                match read.map(|_| serde_json::from_str::<Vec<String>>(&text)) {
                    Ok(Ok(args)) => on_args(args),
                    Ok(Err(e)) => tracing::warn!(error = %e, "a second start sent no arguments"),
                    Err(e) => tracing::warn!(error = %e, "a second start could not be read"),
                }
            }
        });
    }

    #[cfg(not(unix))]
    pub fn serve(&mut self, _on_args: impl Fn(Vec<String>) + Send + 'static) {}
}

#[cfg(unix)]
impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.socket);
    }
}

#[cfg(unix)]
fn forward(data_dir: &Path, args: &[String]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;
    let socket: PathBuf = data_dir.join(SOCKET);
    // The first instance may hold the lock a moment before it listens.
    let mut last = None;
    for _ in 0..50 {
        match UnixStream::connect(&socket) {
            Ok(mut stream) => {
                let text = serde_json::to_string(args).map_err(io::Error::other)?;
                return stream.write_all(text.as_bytes());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(last.unwrap_or_else(|| io::Error::other("no instance listens")))
}

#[cfg(not(unix))]
fn forward(_data_dir: &Path, _args: &[String]) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_second_start_on_the_same_data_dir_hands_over_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let Claim::First(mut first) = claim(dir.path(), &[]).unwrap() else {
            panic!("the first start is the instance");
        };
        let (tx, rx) = mpsc::channel();
        first.serve(move |a| tx.send(a).unwrap());
        let link = args(&["countersign://plan/pln_1"]);
        assert!(matches!(
            claim(dir.path(), &link).unwrap(),
            Claim::Forwarded
        ));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), link);
    }

    #[test]
    fn two_data_dirs_run_side_by_side() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = claim(a.path(), &[]).unwrap();
        let second = claim(b.path(), &[]).unwrap();
        assert!(matches!(first, Claim::First(_)));
        assert!(matches!(second, Claim::First(_)));
    }

    #[test]
    fn the_data_dir_is_free_again_once_the_instance_ends() {
        let dir = tempfile::tempdir().unwrap();
        let first = claim(dir.path(), &[]).unwrap();
        drop(first);
        assert!(matches!(claim(dir.path(), &[]).unwrap(), Claim::First(_)));
    }

    #[test]
    fn a_socket_left_by_a_crash_does_not_stop_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SOCKET), b"").unwrap();
        let Claim::First(mut first) = claim(dir.path(), &[]).unwrap() else {
            panic!("a stale socket holds no lock");
        };
        let (tx, rx) = mpsc::channel();
        first.serve(move |a| tx.send(a).unwrap());
        assert!(matches!(
            claim(dir.path(), &args(&["x"])).unwrap(),
            Claim::Forwarded
        ));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            args(&["x"])
        );
    }

    #[test]
    fn a_connection_that_stalls_or_floods_does_not_keep_the_next_start_out() {
        use std::io::Write as _;
        use std::os::unix::net::UnixStream;
        let dir = tempfile::tempdir().unwrap();
        let Claim::First(mut first) = claim(dir.path(), &[]).unwrap() else {
            panic!("the first start is the instance");
        };
        let (tx, rx) = mpsc::channel();
        first.serve(move |a| tx.send(a).unwrap());
        // One local process connects and says nothing; another sends without end.
        let _silent = UnixStream::connect(dir.path().join(SOCKET)).unwrap();
        let mut flood = UnixStream::connect(dir.path().join(SOCKET)).unwrap();
        std::thread::spawn(move || {
            let chunk = vec![b'['; 64 * 1024];
            while flood.write_all(&chunk).is_ok() {}
        });
        assert!(matches!(
            claim(dir.path(), &args(&["countersign://plan/plan_2"])).unwrap(),
            Claim::Forwarded
        ));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            args(&["countersign://plan/plan_2"])
        );
    }

    #[test]
    fn the_data_dir_is_made_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("fresh");
        let _first = claim(&dir, &[]).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
