//! An audit others can verify (docs/audit-export.md): `history --format in-toto`, `keys`, and
//! `verify FILE`, which checks an export offline against the approvers' public keys.

use std::path::Path;

use countersign_console::audit::intoto;
use countersign_console::{Console, ConsoleError};
use countersign_proto::approvals::ApproverKeys;
use serde::Serialize;

use crate::{print, style, Failure, Outcome};

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Console(ConsoleError::Storage(format!("{}: {e}", path.display()))))
}

/// The keys in `path` (what `keys --out` wrote).
pub fn keys_from(path: &Path) -> Result<ApproverKeys, Failure> {
    serde_json::from_str(&read(path)?).map_err(|e| {
        Failure::Console(ConsoleError::Invalid(format!(
            "{} is not the gateway's approver keys: {e}",
            path.display()
        )))
    })
}

/// `keys`: the gateway's approver keys, to a file or standard output.
pub async fn keys(console: &Console, out: Option<&Path>, json: bool) -> Outcome {
    let keys = console.approver_keys().await?;
    let text = crate::json::pretty(&keys);
    match out {
        Some(path) => {
            std::fs::write(path, text.as_bytes()).map_err(|e| {
                Failure::Console(ConsoleError::Storage(format!("{}: {e}", path.display())))
            })?;
            print(
                json,
                &serde_json::json!({"keys": keys.keys.len(), "file": path}),
                || {
                    format!(
                        "Wrote {} keys of gateway {} to {}.\n",
                        keys.keys.len(),
                        keys.gateway_id,
                        path.display()
                    )
                },
            );
        }
        None => println!("{text}"),
    }
    Ok(())
}

/// `history --format in-toto --export FILE`.
pub async fn export(console: &Console, path: &Path, json: bool) -> Outcome {
    let count = console.export_in_toto(path).await?;
    print(
        json,
        &serde_json::json!({"exported": count, "file": path, "format": "in-toto"}),
        || format!("Wrote {count} in-toto statements to {}.\n", path.display()),
    );
    Ok(())
}

#[derive(Serialize)]
struct Checked {
    line: usize,
    verified: bool,
    what: String,
}

/// `verify FILE`: each line checked against `keys`; fails when any does not verify.
pub fn verify(path: &Path, keys: &ApproverKeys, json: bool) -> Outcome {
    let text = read(path)?;
    let checked: Vec<Checked> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| match intoto::verify(line, keys) {
            Ok(what) => Checked {
                line: i + 1,
                verified: true,
                what,
            },
            Err(why) => Checked {
                line: i + 1,
                verified: false,
                what: why,
            },
        })
        .collect();
    let failed = checked.iter().filter(|c| !c.verified).count();
    print(json, &checked, || {
        let mut out: String = checked
            .iter()
            .map(|c| {
                let mark = if c.verified { "ok  " } else { "FAIL" };
                format!("{mark} line {}: {}\n", c.line, style::clean(&c.what))
            })
            .collect();
        out.push_str(&format!(
            "{} of {} entries verify against the keys of gateway {}.\n",
            checked.len() - failed,
            checked.len(),
            keys.gateway_id
        ));
        out
    });
    if checked.is_empty() {
        return Err(ConsoleError::Invalid(format!("{} holds no entries", path.display())).into());
    }
    if failed > 0 {
        return Err(ConsoleError::Protocol(format!(
            "{failed} of {} entries do not verify",
            checked.len()
        ))
        .into());
    }
    Ok(())
}
