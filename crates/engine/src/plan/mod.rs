//! Plans: an agent's preview evaluated, bounded and stored as a plan (`dry_run`, `previews`,
//! `staging`, `summaries`), read back (`plans`, `reads`), previewed again as a successor (`refresh`,
//! `amend`) and derived again at execution (`rederive`).

pub mod ahead;
pub mod amend;
pub mod bounds;
pub mod dry_run;
mod moved;
pub mod plans;
pub mod previews;
pub mod reads;
pub mod rederive;
pub mod refresh;
pub mod staging;
pub mod stored_plan;
pub mod summaries;
pub mod tasks;
