# The built-in approval policy: each capability's own rule, as its pack declares it. A gateway
# started without --policy evaluates exactly this. A standing approval may meet that rule; what it
# may cover is every risk flag but irreversible and bulk (no standing_flags declared).
package countersign.approval

import rego.v1

rules contains rule if {
	count(input.plan.effects) > 0
	waits
	rule := {
		"id": "capability_default",
		"description": sprintf("%s: the capability's own rule", [input.capability.title]),
		"count": input.capability.approval.required_approvals,
		"standing": true,
	}
}

waits if input.capability.approval.rule == "always"

waits if {
	input.capability.approval.rule == "when_risky"
	some flag in input.risk
	flag != "blocked"
}

waits if {
	input.capability.approval.rule == "above_cost"
	to_number(input.plan.estimated_cost.amount_max) > to_number(input.capability.approval.above)
}
