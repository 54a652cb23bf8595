//! The connection a capability reads and writes through.

use sqlx::AnyConnection;

use crate::sql::Dialect;

/// The engine's connection for one evaluation or execution: a read connection for a preview,
/// the write transaction for an execution; SQLite or PostgreSQL alike. A write that moves a
/// resource's revision says so with [`Handle::moved`], and the engine marks every open plan that
/// read it stale in the same transaction.
///
/// Emails a capability sends are rows of the gateway's outbox, written in the same transaction
/// (`email_outbox (user_id, recipient, subject, body, plan_id, created_at)`, `plan_id` from
/// [`crate::Execution`]); the server delivers them after the commit, never before.
pub struct Handle<'c> {
    conn: &'c mut AnyConnection,
    moved: Vec<String>,
}

impl<'c> Handle<'c> {
    pub fn new(conn: &'c mut AnyConnection) -> Handle<'c> {
        Handle {
            conn,
            moved: Vec::new(),
        }
    }

    pub fn conn(&mut self) -> &mut AnyConnection {
        self.conn
    }

    pub fn dialect(&self) -> Dialect {
        Dialect::of(self.conn)
    }

    /// `resource` is at a new revision from this transaction on.
    pub fn moved(&mut self, resource: impl Into<String>) {
        let resource = resource.into();
        if !self.moved.contains(&resource) {
            self.moved.push(resource);
        }
    }

    /// The resources moved so far, in the order they first moved; the engine takes them.
    pub fn take_moved(&mut self) -> Vec<String> {
        std::mem::take(&mut self.moved)
    }
}
