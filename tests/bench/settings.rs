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
pub const PARTS: [&str; 8] = [
    "criterion",
    "policy",
    "polls",
    "writes",
    "bulk",
    "latency",
    "proxy",
    "desktop",
];

/// The parts a quick run leaves out.
const FULL_ONLY: [&str; 3] = ["writes", "bulk", "desktop"];

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

/// `--quick` and the parts of `--only PART,…`.
fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<(bool, Vec<String>)> {
    let mut quick = false;
    let mut only = Vec::new();
    let mut args = args.into_iter();
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
    Ok((quick, only))
}

impl Settings {
    pub fn from_args() -> anyhow::Result<Settings> {
        let (quick, only) = parse(std::env::args().skip(1))?;
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

    /// Whether this run measures `part` (one of [`PARTS`]): every part `--only` names (all when
    /// it names none), less those a quick run leaves out.
    pub fn runs(&self, part: &str) -> bool {
        let asked = self.only.is_empty() || self.only.iter().any(|p| p == part);
        asked && !(self.quick && FULL_ONLY.contains(&part))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> anyhow::Result<Settings> {
        let (quick, only) = parse(args.iter().map(|a| a.to_string()))?;
        Ok(Settings {
            quick,
            only,
            store: Store::Sqlite,
            bin_dir: PathBuf::new(),
            workspace: PathBuf::new(),
            out_dir: PathBuf::new(),
        })
    }

    #[test]
    fn only_the_parts_asked_for_run_and_such_a_run_is_not_history() {
        let all = settings(&[]).unwrap();
        assert!(PARTS.iter().all(|p| all.runs(p)));
        assert!(all.complete());

        let some = settings(&["--only", "latency,polls"]).unwrap();
        assert!(some.runs("latency") && some.runs("polls"));
        assert!(!some.runs("criterion") && !some.runs("desktop"));
        assert!(!some.complete());

        let quick = settings(&["--quick", "--only", "bulk,latency"]).unwrap();
        assert!(!quick.runs("bulk"), "a quick run has no bulk part");
        assert!(quick.runs("latency"));
        assert!(!quick.complete());
    }

    #[test]
    fn an_unknown_part_or_argument_is_refused() {
        let err = settings(&["--only", "latency,speed"]).err().unwrap();
        assert!(err.to_string().contains("\"speed\""), "{err}");
        assert!(settings(&["--only"]).is_err());
        assert!(settings(&["--fast"]).is_err());
    }
}
