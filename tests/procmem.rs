//! What Linux reports of a process's memory: resident peak (`VmHWM`, which `clear_refs` can reset
//! so that one operation's peak is read alone), the proportional set size of a process tree, and
//! the processor time a tree has used.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Context as _;

/// A `kB` field of `/proc/<pid>/status` or `smaps_rollup`, in bytes.
fn kb_field(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn read(pid: u32, file: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .with_context(|| format!("reading /proc/{pid}/{file}"))
}

/// Peak resident set since start or since the last [`reset_peak`].
pub fn peak_rss(pid: u32) -> anyhow::Result<u64> {
    kb_field(&read(pid, "status")?, "VmHWM:").context("no VmHWM in /proc/<pid>/status")
}

pub fn rss(pid: u32) -> anyhow::Result<u64> {
    kb_field(&read(pid, "status")?, "VmRSS:").context("no VmRSS in /proc/<pid>/status")
}

/// Sets `VmHWM` back to the current RSS (`echo 5 > /proc/<pid>/clear_refs`).
pub fn reset_peak(pid: u32) -> anyhow::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .with_context(|| format!("resetting the peak RSS of {pid}"))
}

pub fn pss(pid: u32) -> anyhow::Result<u64> {
    kb_field(&read(pid, "smaps_rollup")?, "Pss:").context("no Pss in smaps_rollup")
}

fn parent(pid: u32) -> Option<u32> {
    let stat = read(pid, "stat").ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `root` and every process below it.
pub fn tree(root: u32) -> BTreeSet<u32> {
    let links: Vec<(u32, u32)> = all_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, parent(pid)?)))
        .collect();
    let mut found = BTreeSet::from([root]);
    loop {
        let before = found.len();
        for (pid, parent) in &links {
            if found.contains(parent) {
                found.insert(*pid);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// The first process below `root` whose executable is `name`.
pub fn find_below(root: u32, name: &str) -> Option<u32> {
    tree(root).into_iter().find(|pid| {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f == name))
            .unwrap_or(false)
    })
}

/// PSS of `root` and all its descendants, summed, and by command name (largest first).
pub fn tree_pss(root: u32) -> anyhow::Result<(u64, Vec<(String, u64)>)> {
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for pid in tree(root) {
        // A process that ended between the listing and now no longer holds memory.
        let Ok(bytes) = pss(pid) else { continue };
        let name = read(pid, "comm").unwrap_or_default().trim().to_owned();
        *by_name.entry(name).or_default() += bytes;
    }
    anyhow::ensure!(!by_name.is_empty(), "process {root} is gone");
    let mut parts: Vec<(String, u64)> = by_name.into_iter().collect();
    parts.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    Ok((parts.iter().map(|(_, b)| b).sum(), parts))
}

/// Clock ticks per second, the unit of `/proc/<pid>/stat`'s times.
fn ticks_per_second() -> anyhow::Result<f64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .context("running getconf CLK_TCK")?;
    let ticks: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    anyhow::ensure!(ticks > 0.0, "getconf CLK_TCK answered {ticks}");
    Ok(ticks)
}

/// User and system time of one process so far, in ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = read(pid, "stat").ok()?;
    // After the command name: state, ppid, … utime (field 14) and stime (field 15).
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Processor time `root` and its descendants have used so far, in seconds, by command name.
/// Processes that ended are not counted, so compare two readings of a tree whose processes live
/// throughout.
pub fn tree_cpu_seconds(root: u32) -> anyhow::Result<BTreeMap<String, f64>> {
    let per_second = ticks_per_second()?;
    let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
    for pid in tree(root) {
        let Some(ticks) = cpu_ticks(pid) else {
            continue;
        };
        let name = read(pid, "comm").unwrap_or_default().trim().to_owned();
        *by_name.entry(name).or_default() += ticks as f64 / per_second;
    }
    Ok(by_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_peak_a_pss_and_a_tree() {
        let me = std::process::id();
        // The peak never falls below what was resident earlier.
        let resident = rss(me).unwrap();
        assert!(peak_rss(me).unwrap() >= resident && resident > 0);
        assert!(pss(me).unwrap() > 0);
        assert!(tree(me).contains(&me));
        let total = || tree_cpu_seconds(me).unwrap().values().sum::<f64>();
        let before = total();
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(100) {
            std::hint::black_box(started.elapsed());
        }
        assert!(total() > before);
        assert_eq!(
            kb_field("Name:\tx\nVmHWM:\t   2048 kB\n", "VmHWM:"),
            Some(2048 * 1024)
        );
    }
}
