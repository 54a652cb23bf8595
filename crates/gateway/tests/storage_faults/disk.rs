//! Real disks that fill: a small tmpfs holding a SQLite database, or the data directory of a
//! PostgreSQL cluster of the test's own. Mounting needs root, as `make test` runs in CI; the
//! PostgreSQL one needs the server installed (`make test` installs it) and fails without it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A small tmpfs, unmounted when dropped.
pub struct Tmpfs(pub tempfile::TempDir);

impl Tmpfs {
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            status.success(),
            "mounting a tmpfs for the full-disk test failed: it needs root (make test in CI runs as root)"
        );
        Tmpfs(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// A disk the store lives on, which a test fills.
pub enum Disk {
    Sqlite(Tmpfs),
    Postgres(Cluster),
}

impl Disk {
    /// A SQLite database on a tmpfs of `size`.
    pub fn sqlite(size: &str) -> Disk {
        Disk::Sqlite(Tmpfs::mount(size))
    }

    /// A PostgreSQL cluster whose data directory is a tmpfs of `size`.
    pub fn postgres(size: &str) -> Disk {
        Disk::Postgres(Cluster::start(size))
    }

    pub fn url(&self) -> String {
        match self {
            Disk::Sqlite(disk) => format!("sqlite://{}", disk.path().join("gw.db").display()),
            Disk::Postgres(cluster) => cluster.url(),
        }
    }

    fn tmpfs(&self) -> &Tmpfs {
        match self {
            Disk::Sqlite(disk) => disk,
            Disk::Postgres(cluster) => &cluster.data,
        }
    }

    /// Fills the disk to its last byte: a file takes what is left. Its path, to free it.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.tmpfs().path().join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 16 * 1024];
        while file
            .write_all(&chunk)
            .and_then(|()| file.sync_data())
            .is_ok()
        {}
        filler
    }
}

/// A PostgreSQL cluster of its own on a free loopback port, its data directory a small tmpfs.
/// Its write-ahead log lives elsewhere: a full data volume then refuses the writes that extend a
/// table (`disk_full`), as a full disk does, without stopping the server, which a full log would.
/// The server runs as the `postgres` user, since it refuses to run as root.
pub struct Cluster {
    data: Tmpfs,
    wal: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl Cluster {
    fn start(size: &str) -> Cluster {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|versions| versions.filter_map(Result::ok).map(|v| v.path()).max())
            .map(|version| version.join("bin"))
            .expect(
                "the full-disk test on PostgreSQL needs the server: apt-get install postgresql",
            );
        let data = Tmpfs::mount(size);
        let wal = tempfile::tempdir().unwrap();
        for dir in [data.path(), wal.path()] {
            owned_by_postgres(dir);
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Cluster {
            data,
            wal,
            bin,
            port,
        };
        cluster.as_postgres(
            "initdb",
            &[
                "-D",
                &cluster.directory().display().to_string(),
                "--waldir",
                &cluster.wal.path().join("pg_wal").display().to_string(),
                "-A",
                "trust",
                "-U",
                "countersign",
                "--locale=C.UTF-8",
            ],
        );
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off",
            cluster.wal.path().display()
        );
        cluster.as_postgres(
            "pg_ctl",
            &[
                "-D",
                &cluster.directory().display().to_string(),
                "-l",
                &cluster.wal.path().join("log").display().to_string(),
                "-w",
                "-o",
                &options,
                "start",
            ],
        );
        cluster
    }

    fn directory(&self) -> PathBuf {
        self.data.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgres://countersign@127.0.0.1:{}/postgres", self.port)
    }

    fn as_postgres(&self, program: &str, args: &[&str]) {
        let output = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join(program))
            .args(args)
            .output()
            .expect("runuser runs");
        assert!(
            output.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.directory())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

fn owned_by_postgres(dir: &Path) {
    let status = Command::new("chown")
        .arg("postgres")
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown postgres {}", dir.display());
}
