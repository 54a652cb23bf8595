//! Which of a plan's read revisions moved since it was made: each asked of its domain, or, for
//! resources only the calling agent can read, compared with what it says it observes.

use std::collections::BTreeMap;

use countersign_proto::approvals::MovedRevision;
use countersign_proto::plan::ReadRevision;
use sqlx::AnyConnection;

use crate::registry::Registry;
use crate::ApiResult;

/// What the calling agent says it observes now of resources only it can read
/// (`InvokeRequest::observed`): `None` where no agent speaks, and those reads are not judged.
pub type Observed<'a> = Option<&'a BTreeMap<String, String>>;

/// The read revisions that moved since the plan was made.
pub async fn moved(
    conn: &mut AnyConnection,
    registry: &Registry,
    read: &[ReadRevision],
    observed: Observed<'_>,
) -> ApiResult<Vec<MovedRevision>> {
    let mut moved = Vec::new();
    for r in read {
        let current = if registry.observed_by_caller(&r.resource) {
            match observed {
                None => continue,
                Some(observed) => observed
                    .get(&r.resource)
                    .cloned()
                    .unwrap_or_else(|| "not observed".to_owned()),
            }
        } else {
            registry
                .revision(conn, &r.resource)
                .await?
                .unwrap_or_else(|| "deleted".to_owned())
        };
        if current != r.revision {
            moved.push(MovedRevision {
                resource: r.resource.clone(),
                planned: r.revision.clone(),
                current,
            });
        }
    }
    Ok(moved)
}
