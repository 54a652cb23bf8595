//! The words the tray shows for the pending count.

pub fn pending(count: usize) -> String {
    match count {
        0 => "No plans pending".to_owned(),
        1 => "1 plan pending".to_owned(),
        n => format!("{n} plans pending"),
    }
}

/// The tray's tooltip, which is all some trays show.
pub fn tooltip(count: usize) -> String {
    format!("Countersign: {}", pending(count).to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tray_counts_pending_plans_in_words() {
        assert_eq!(pending(0), "No plans pending");
        assert_eq!(pending(1), "1 plan pending");
        assert_eq!(pending(37), "37 plans pending");
        assert_eq!(tooltip(2), "Countersign: 2 plans pending");
    }
}
