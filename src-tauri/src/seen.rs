//! Which pending plans the app has already looked at, so a notification goes out once per plan
//! and never for what was already waiting when the app (or a new gateway session) started.

use std::collections::HashSet;

#[derive(Default)]
pub struct Seen {
    ids: HashSet<String>,
    looked: bool,
}

impl Seen {
    /// The plans among `pending` never seen before, in their order; none on the first look,
    /// which only takes note of them.
    pub fn arrivals<'a>(&mut self, pending: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let first_look = !std::mem::replace(&mut self.looked, true);
        pending
            .into_iter()
            .filter(|id| self.ids.insert((*id).to_owned()))
            .filter(|_| !first_look)
            .map(str::to_owned)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_look_announces_nothing() {
        let mut seen = Seen::default();
        assert!(seen.arrivals(["pln_1", "pln_2"]).is_empty());
        assert_eq!(seen.arrivals(["pln_1", "pln_2", "pln_3"]), vec!["pln_3"]);
    }

    #[test]
    fn a_plan_is_announced_once_even_if_it_leaves_and_returns() {
        let mut seen = Seen::default();
        seen.arrivals([]);
        assert_eq!(seen.arrivals(["pln_1"]), vec!["pln_1"]);
        assert!(seen.arrivals(["pln_1"]).is_empty());
        assert!(seen.arrivals([]).is_empty());
        assert!(seen.arrivals(["pln_1"]).is_empty());
    }
}
