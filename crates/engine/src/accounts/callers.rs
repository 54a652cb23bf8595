//! Who calls: an agent (acting for a person, or for nobody) or an approver (who may be a person).

use countersign_proto::ErrorCode;

use crate::{ApiError, ApiResult};

/// Whoever a bearer token belongs to.
#[derive(Debug, Clone)]
pub enum Caller {
    Agent(Agent),
    Approver(Approver),
}

impl Caller {
    /// The agent behind an agent token; approvers neither preview nor invoke.
    pub fn into_agent(self) -> ApiResult<Agent> {
        match self {
            Caller::Agent(agent) => Ok(agent),
            Caller::Approver(_) => Err(ApiError::new(
                ErrorCode::Forbidden,
                "Approver tokens cannot preview or invoke capabilities.",
            )),
        }
    }

    /// The approver behind an approver token; agents neither read the queue nor decide.
    pub fn into_approver(self) -> ApiResult<Approver> {
        match self {
            Caller::Approver(approver) => Ok(approver),
            Caller::Agent(_) => Err(ApiError::new(
                ErrorCode::Forbidden,
                "Agent tokens cannot read the approval queue or decide plans.",
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Agent {
    pub id: String,
    pub on_behalf_of: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Approver {
    pub id: String,
    pub display_name: String,
    /// The person behind the approver, when known: they may not decide plans made on their behalf.
    pub user_id: Option<String>,
}
