//! The store's migrations, embedded in the binary. This is what `sqlx::migrate!` makes (same
//! versions, descriptions and checksums, so stores it migrated carry on), without its proc macro:
//! that compiles both database drivers a second time, for the build host, on every clean build.

use std::borrow::Cow;
use std::sync::LazyLock;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(file name, contents)` of each file named, from each store's folder: both stores migrate in
/// the same steps, under the same names.
macro_rules! embedded {
    ($($file:literal)*) => {
        (
            &[$(($file, include_str!(concat!("../../migrations/", $file)))),*],
            &[$(($file, include_str!(concat!("../../migrations-postgres/", $file)))),*],
        )
    };
}

type Files = &'static [(&'static str, &'static str)];

const FILES: (Files, Files) = embedded!(
    "0001_init.sql" "0002_world.sql" "0003_queue.sql" "0004_accounts.sql" "0005_agents.sql"
    "0006_live_reads.sql" "0007_queue_covering.sql" "0008_plan_consequences.sql"
    "0009_mail_delivery.sql" "0010_outbox_pending_by_id.sql" "0011_plan_runner.sql"
    "0012_staged_subjects.sql" "0013_blocked_plans_unqueued.sql" "0014_user_revisions.sql"
    "0015_approval_policy.sql" "0016_rule_escalation.sql" "0017_standing_approvals.sql"
    "0018_standing_uses_at_execution.sql" "0019_mail_remedies.sql" "0020_plan_transitions.sql"
    "0021_documents_sized_by_project.sql" "0022_shared_subject_sets.sql"
    "0023_mcp_tasks.sql"
);
const SQLITE_FILES: Files = FILES.0;
const POSTGRES_FILES: Files = FILES.1;

pub static SQLITE: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE_FILES));
pub static POSTGRES: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES_FILES));

/// A migrator over `files`, each named `<version>_<description>.sql` as sqlx names them.
fn migrator(files: Files) -> Migrator {
    let migrations = files
        .iter()
        .map(|(name, sql)| {
            let (version, description) = name
                .strip_suffix(".sql")
                .and_then(|n| n.split_once('_'))
                .expect("a migration is named <version>_<description>.sql");
            Migration::new(
                version.parse().expect("a migration's version is a number"),
                Cow::Owned(description.replace('_', " ")),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                sql.starts_with("-- no-transaction"),
            )
        })
        .collect();
    Migrator {
        migrations: Cow::Owned(migrations),
        ignore_missing: false,
        locking: true,
        no_tx: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to a migrations folder and not listed here would never run.
    #[test]
    fn every_file_of_each_folder_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for (folder, files) in [
            ("migrations", SQLITE_FILES),
            ("migrations-postgres", POSTGRES_FILES),
        ] {
            let mut on_disk: Vec<String> = std::fs::read_dir(dir.join(folder))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            on_disk.sort();
            let listed: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
            assert_eq!(on_disk, listed, "{folder}");
        }
    }

    /// The versions and descriptions `sqlx::migrate!` recorded in `_sqlx_migrations`.
    #[test]
    fn names_become_the_versions_and_descriptions_sqlx_recorded() {
        let sixth = SQLITE.iter().nth(5).unwrap();
        assert_eq!((sixth.version, &*sixth.description), (6, "live reads"));
        assert_eq!(POSTGRES.iter().count(), POSTGRES_FILES.len());
        assert!(SQLITE.iter().all(|m| !m.no_tx && !m.checksum.is_empty()));
    }
}
