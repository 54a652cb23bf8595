//! How much each part of a run measures: `make bench` (everything, repeated) or `make bench-quick`
//! (a subset, fewer and shorter runs), and where binaries and results are.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

/// Why the console core cannot keep a key here, if it cannot: it needs a Secret Service.
pub fn keyring_missing() -> Option<&'static str> {
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS")
        .is_none()
        .then_some("no Secret Service (make bench starts one)")
}

/// The store of the gateways a part of the run starts: a SQLite file, or a new database on a
/// PostgreSQL server.
#[derive(Clone, Debug)]
pub enum Store {
    Sqlite,
    Postgres { server: String },
}

impl Store {
    /// What a row measured on this store adds to its bar.
    pub fn suffix(&self) -> &'static str {
        match self {
            Store::Sqlite => "",
            Store::Postgres { .. } => " [PostgreSQL]",
        }
    }
}

/// The PostgreSQL server `make bench` starts beside the run (tests/with-postgres.sh), if any.
pub fn postgres_server() -> Option<String> {
    std::env::var("COUNTERSIGN_TEST_POSTGRES").ok()
}

/// The parts of a run, as `--only` names them.
pub const PARTS: [&str; 6] = ["criterion", "polls", "writes", "bulk", "latency", "desktop"];

#[derive(Clone)]
pub struct Settings {
    pub quick: bool,
    /// The parts `--only` asked for; every part when empty.
    pub only: Vec<String>,
    pub store: Store,
    /// Where `countersign-bench` itself and the release binaries it starts live.
    pub bin_dir: PathBuf,
    pub workspace: PathBuf,
    /// `target/bench`: the report and criterion's results.
    pub out_dir: PathBuf,
}

impl Settings {
    pub fn from_args() -> anyhow::Result<Settings> {
        let mut quick = false;
        let mut only = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => quick = true,
                "--only" => {
                    let parts = args.next().context("--only needs a list of parts")?;
                    for part in parts.split(',') {
                        anyhow::ensure!(
                            PARTS.contains(&part),
                            "unknown part {part:?} (parts: {})",
                            PARTS.join(", ")
                        );
                        only.push(part.to_owned());
                    }
                }
                other => anyhow::bail!("unknown argument {other:?} (--quick, --only PART,…)"),
            }
        }
        let exe = std::env::current_exe()?;
        let bin_dir = exe
            .parent()
            .context("the bench binary's folder")?
            .to_owned();
        // <target>/release/countersign-bench → <target>/bench
        let out_dir = bin_dir.parent().context("the target folder")?.join("bench");
        std::fs::create_dir_all(&out_dir)?;
        Ok(Settings {
            quick,
            only,
            store: Store::Sqlite,
            bin_dir,
            workspace: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            out_dir,
        })
    }

    /// Whether this run measures `part` (one of [`PARTS`]).
    pub fn runs(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == part)
    }

    /// A run of every part, at full size: only such a run is history.
    pub fn complete(&self) -> bool {
        !self.quick && self.only.is_empty()
    }

    /// wrk runs per row: the median of these is the row's value.
    pub fn wrk_runs(&self) -> usize {
        if self.quick {
            1
        } else {
            3
        }
    }

    pub fn wrk_duration(&self) -> Duration {
        Duration::from_secs(if self.quick { 2 } else { 3 })
    }

    /// Pending plans at which the `304` rate is measured.
    pub fn pending_stages(&self) -> &'static [usize] {
        if self.quick {
            &[10, 1_000]
        } else {
            &[10, 1_000, 10_000]
        }
    }

    /// Timed repetitions of one in-process or single-request measurement.
    pub fn repeats(&self) -> usize {
        if self.quick {
            3
        } else {
            5
        }
    }

    /// Pending plans already in the queue while latency is measured (issue 28: the bars hold at
    /// 10,000 pending).
    pub fn latency_backlog(&self) -> usize {
        if self.quick {
            1_000
        } else {
            10_000
        }
    }

    /// Latency samples (SSE arrival, decision round trip).
    pub fn latency_samples(&self) -> usize {
        if self.quick {
            20
        } else {
            100
        }
    }
}
