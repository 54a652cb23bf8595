//! Who must approve a plan and whether they have: the policy's rules (`policy`, `policy_change`,
//! `teams`, `requirement`), who may decide (`eligibility`), signed decisions (`decisions`) and where
//! they leave a plan (`approvals`), standing approvals (`standing`), revocation, escalation, and the
//! gateway's receipts for what it accepted (`receipts`), how any signed statement is opened
//! (`signed`), and how approvals are going (`stats`).

pub mod approvals;
pub mod decisions;
pub mod eligibility;
pub mod escalation;
pub mod policy;
pub mod policy_change;
pub mod receipts;
pub mod requirement;
pub mod revocation;
pub mod signed;
pub mod standing;
pub mod stats;
pub mod teams;
