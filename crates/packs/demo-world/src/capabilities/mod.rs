//! The demo world's capabilities: each module keeps its evaluation and its writes, this file only
//! tells the engine which is which.

mod documents_upload;
mod groups_members_remove;
mod memberships_grant;
mod projects_settings;
mod storage_quota;

use countersign_pack::{
    parse, ApiResult, Applied, ApprovalRule, BoxFuture, Definition, EffectProfile, Execution,
    Handle, Kind, Planned, Target, WorldCapability,
};
use countersign_proto::describe::Describe;
use serde_json::Value;

use crate::world::{GROUP, PROJECT, QUOTA};

/// One world capability: `$module` holds `ID`, `TITLE`, `EFFECTS`, `describe()`; the closures
/// call its `plan` (with the handle's connection) and `apply` (with the handle) with their own
/// param types.
macro_rules! world_capability {
    ($name:ident, $module:ident, $target:expr, $approval:expr,
     plan: |$pc:ident, $pp:ident| $plan:expr,
     apply: |$ac:ident, $ap:ident, $planned:ident, $execution:ident| $apply:expr) => {
        struct $name;

        impl Definition for $name {
            fn id(&self) -> &'static str {
                $module::ID
            }
            fn title(&self) -> &'static str {
                $module::TITLE
            }
            fn describe(&self) -> Describe {
                $module::describe()
            }
            fn effects(&self) -> EffectProfile {
                $module::EFFECTS
            }
            fn target(&self) -> Option<Target> {
                $target
            }
            fn approval(&self) -> ApprovalRule {
                $approval
            }
            fn plan<'a>(
                &'a self,
                handle: &'a mut Handle<'_>,
                params: &'a Value,
            ) -> BoxFuture<'a, ApiResult<Planned>> {
                Box::pin(async move {
                    let $pc = handle.conn();
                    let $pp = parse(params)?;
                    $plan
                })
            }
        }

        impl WorldCapability for $name {
            fn apply<'a>(
                &'a self,
                $ac: &'a mut Handle<'_>,
                params: &'a Value,
                $planned: &'a Planned,
                $execution: Execution<'a>,
            ) -> BoxFuture<'a, ApiResult<Applied>> {
                Box::pin(async move {
                    let $ap = parse(params)?;
                    $apply
                })
            }
        }
    };
}

world_capability!(DocumentsUpload, documents_upload, Some(PROJECT), ApprovalRule::WhenRisky,
    plan: |conn, p| documents_upload::plan(conn, &p).await,
    apply: |conn, p, planned, _execution| documents_upload::apply(conn, &p, planned).await);

world_capability!(ProjectsSettingsUpdate, projects_settings, Some(PROJECT), ApprovalRule::Always,
    plan: |conn, p| projects_settings::plan(conn, &p).await,
    apply: |conn, p, planned, _execution| projects_settings::apply(conn, &p, planned).await);

world_capability!(MembershipsGrant, memberships_grant, Some(PROJECT), ApprovalRule::Always,
    plan: |conn, p| memberships_grant::plan(conn, &p).await,
    apply: |conn, p, planned, execution| memberships_grant::apply(conn, &p, planned, execution).await);

world_capability!(GroupsMembersRemove, groups_members_remove, Some(GROUP), ApprovalRule::Always,
    plan: |conn, p| groups_members_remove::plan(conn, &p).await,
    apply: |conn, p, planned, execution| groups_members_remove::apply(conn, &p, planned, execution).await);

world_capability!(StorageQuotaUpdate, storage_quota, Some(QUOTA), ApprovalRule::WhenRisky,
    plan: |conn, p| storage_quota::plan(conn, &p).await,
    apply: |conn, p, planned, _execution| storage_quota::apply(conn, &p, planned).await);

/// The demo world's five capabilities, in the order `GET /v1/capabilities` lists them.
pub fn all() -> Vec<Kind> {
    vec![
        Kind::World(Box::new(DocumentsUpload)),
        Kind::World(Box::new(ProjectsSettingsUpdate)),
        Kind::World(Box::new(MembershipsGrant)),
        Kind::World(Box::new(GroupsMembersRemove)),
        Kind::World(Box::new(StorageQuotaUpdate)),
    ]
}
