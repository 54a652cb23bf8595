# The example policy's own tests: countersign-gateway policy test examples/policy
package countersign.approval

import rego.v1

bulk := {
	"capability": {"id": "groups.members.remove", "approval": {"rule": "always", "required_approvals": 2}},
	"risk": ["bulk", "access_change"],
	"plan": {"estimated_cost": {"amount_max": "0.37"}},
	"now": "2026-12-05T11:00:00Z",
}

test_a_bulk_removal_needs_two_leads if {
	ids := {rule.id | some rule in rules} with input as bulk
	ids == {"leads_for_bulk_removals"}
}

test_a_bulk_removal_at_night_is_refused if {
	count(deny) == 1 with input as object.union(bulk, {"now": "2026-12-05T23:30:00Z"})
}

test_a_bulk_removal_by_day_is_not_refused if {
	count(deny) == 0 with input as bulk
}

test_money_above_the_threshold_needs_finance if {
	ids := {rule.id | some rule in rules} with input as {
		"capability": {"id": "text.generate", "approval": {"rule": "above_cost", "above": "0.50", "required_approvals": 1}},
		"risk": ["money", "external"],
		"plan": {"estimated_cost": {"amount_max": "12.00"}},
		"now": "2026-12-05T11:00:00Z",
	}
	ids == {"finance_above_threshold"}
}

test_a_small_change_needs_one_approver if {
	ids := {rule.id | some rule in rules} with input as {
		"capability": {"id": "projects.settings.update", "approval": {"rule": "always", "required_approvals": 1}},
		"risk": [],
		"plan": {"estimated_cost": {"amount_max": "0.00"}},
		"now": "2026-12-05T11:00:00Z",
	}
	ids == {"one_approver"}
}
