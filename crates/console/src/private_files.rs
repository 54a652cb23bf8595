//! The data directory holds the journal of signed decisions and which gateway this machine is
//! enrolled with: other local users may read none of it. Directories are `0700`, files `0600`
//! (on Unix; elsewhere the platform's per-user data directory already is private).

use std::io::Write as _;
use std::path::Path;

use crate::error::ConsoleError;

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

fn storage_error(path: &Path, e: std::io::Error) -> ConsoleError {
    ConsoleError::Storage(format!("{}: {e}", path.display()))
}

/// Creates `dir` (and the parents it lacks), each private from the moment it exists (made with
/// mode `0700`, not made and then restricted), and makes `dir` private if it existed already.
pub fn create_dir(dir: &Path) -> Result<(), ConsoleError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .and_then(|()| set_mode(dir, 0o700))
        .map_err(|e| storage_error(dir, e))
}

/// Makes existing files private; the ones that do not exist are skipped.
pub fn restrict(paths: &[&Path]) -> Result<(), ConsoleError> {
    for path in paths {
        match set_mode(path, 0o600) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(storage_error(path, e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Replaces `path` with `bytes` in one step (write aside, then rename), private from the start.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), ConsoleError> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&partial)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| set_mode(&partial, 0o600))
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| storage_error(path, e))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn directories_and_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/data");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir(&dir).unwrap();
        assert_eq!(
            mode(&dir),
            0o700,
            "an existing directory is made private again"
        );
        let file = dir.join("gateway.json");
        write(&file, b"{}").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read(&file).unwrap(), b"{}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        restrict(&[&file, &dir.join("absent")]).unwrap();
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn every_directory_made_for_the_data_is_private_from_the_start() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("made/for/data");
        create_dir(&dir).unwrap();
        // Made with its mode, not restricted after: the parents it made never stood open.
        for made in ["made", "made/for", "made/for/data"] {
            assert_eq!(mode(&root.path().join(made)), 0o700, "{made}");
        }
    }
}
