//! The TypeScript types of everything that crosses IPC are generated from Rust and committed;
//! this fails when `ui/src/backend/types.ts` is out of date. `UPDATE_TS=1` rewrites it.

use std::path::PathBuf;

use countersign_console::amend::{AmendDraft, FormField, FormFieldKind};
use countersign_console::audit::history::HistoryEntry;
use countersign_console::console::SubjectCheck;
use countersign_console::error::ErrorView;
use countersign_console::insights::{InsightDay, InsightRow, InsightsView};
use countersign_console::live::notify::NotifyRules;
use countersign_console::live::window::WindowAsk;
use countersign_console::live::Link;
use countersign_console::mail::RemedyOutcome;
use countersign_console::review::batch::{
    BatchColumn, BatchItem, BatchOutcome, BatchResult, BatchView, Overlap,
};
use countersign_console::review::changed::{EffectChange, EffectRef, RevisionMove, WhatChanged};
use countersign_console::review::diff::{DiffLine, JsonChange, Segment, ValueChange, ValueDiff};
use countersign_console::review::execution::{
    DeliveriesView, DeliveryIssue, ExecutionView, FailureView, RemedyTaken,
};
use countersign_console::review::media::{MediaKind, MediaView};
use countersign_console::review::request::{McpCallView, ParamView, RequestView};
use countersign_console::review::rules::{RuleView, Turn};
use countersign_console::review::sample::SampleCheck;
use countersign_console::review::subjects::{SubjectRow, SubjectsPage};
use countersign_console::review::window::{
    Arrival, Facet, FacetCount, PinnedRow, PlacedRow, QueueChange, QueueCounts, QueueQuery,
    QueueWindow, Sort,
};
use countersign_console::review::{
    ApprovalView, AssumptionView, ChangeView, CostView, DecisionView, EffectGroup, EffectView,
    MovedView, NamedItem, PlanView, QueueItem, RefreshView, RowGist, ValidationView, WalletView,
};
use countersign_console::session::StatusView;
use countersign_console::settings::{Settings, SettingsView, Theme};
use countersign_console::signing::journal::JournalEntry;
use countersign_console::standing::{
    ConstraintOp, ConstraintView, StandingDraft, StandingStateView, StandingUseView, StandingView,
};
use ts_rs::TS;

fn declarations() -> String {
    let decls = [
        ErrorView::decl(),
        InsightRow::decl(),
        InsightDay::decl(),
        InsightsView::decl(),
        Turn::decl(),
        RuleView::decl(),
        QueueItem::decl(),
        Facet::decl(),
        Sort::decl(),
        QueueQuery::decl(),
        WindowAsk::decl(),
        FacetCount::decl(),
        QueueCounts::decl(),
        PinnedRow::decl(),
        QueueWindow::decl(),
        PlacedRow::decl(),
        Arrival::decl(),
        QueueChange::decl(),
        RowGist::decl(),
        Segment::decl(),
        DiffLine::decl(),
        JsonChange::decl(),
        ValueDiff::decl(),
        ChangeView::decl(),
        EffectView::decl(),
        EffectGroup::decl(),
        ValidationView::decl(),
        NamedItem::decl(),
        AssumptionView::decl(),
        CostView::decl(),
        MovedView::decl(),
        PlanView::decl(),
        StatusView::decl(),
        DecisionView::decl(),
        EffectRef::decl(),
        ValueChange::decl(),
        EffectChange::decl(),
        RevisionMove::decl(),
        WhatChanged::decl(),
        SubjectCheck::decl(),
        SampleCheck::decl(),
        RequestView::decl(),
        ParamView::decl(),
        McpCallView::decl(),
        JournalEntry::decl(),
        NotifyRules::decl(),
        Link::decl(),
        ApprovalView::decl(),
        WalletView::decl(),
        DeliveryIssue::decl(),
        RemedyTaken::decl(),
        RemedyOutcome::decl(),
        MediaKind::decl(),
        MediaView::decl(),
        FailureView::decl(),
        DeliveriesView::decl(),
        ExecutionView::decl(),
        RefreshView::decl(),
        SubjectRow::decl(),
        SubjectsPage::decl(),
        BatchColumn::decl(),
        Overlap::decl(),
        BatchView::decl(),
        BatchItem::decl(),
        BatchResult::decl(),
        BatchOutcome::decl(),
        HistoryEntry::decl(),
        Theme::decl(),
        Settings::decl(),
        SettingsView::decl(),
        ConstraintOp::decl(),
        ConstraintView::decl(),
        StandingDraft::decl(),
        StandingStateView::decl(),
        StandingUseView::decl(),
        StandingView::decl(),
        FormFieldKind::decl(),
        FormField::decl(),
        AmendDraft::decl(),
    ];
    let mut out = String::from(
        "// Generated from crates/console by `UPDATE_TS=1 cargo test -p countersign-console --test console ts_types`.\n// Do not edit.\n",
    );
    for decl in decls {
        out.push_str("\nexport ");
        out.push_str(&decl);
        out.push('\n');
    }
    out
}

#[test]
fn committed_typescript_types_are_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/backend/types.ts");
    let expected = declarations();
    if std::env::var_os("UPDATE_TS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == expected,
        "{} is out of date: run UPDATE_TS=1 cargo test -p countersign-console --test console ts_types",
        path.display()
    );
}
