# The demo world's approval policy: who must approve what (docs/policy.md).
#
#   countersign-gateway policy test examples/policy
#   countersign-gateway policy check examples/policy
#   countersign-gateway serve --demo --database sqlite://gw.db --policy examples/policy
package countersign.approval

import rego.v1

cost := to_number(input.plan.estimated_cost.amount_max)

bulk_removal if {
	input.capability.id == "groups.members.remove"
	"bulk" in input.risk
}

# What the capability's own rule would send to people (the built-in policy).
waits if input.capability.approval.rule == "always"

waits if {
	input.capability.approval.rule == "when_risky"
	some flag in input.risk
	flag != "blocked"
}

waits if {
	input.capability.approval.rule == "above_cost"
	cost > to_number(input.capability.approval.above)
}

# No self-approval: nobody of the requesting agent's own team approves its plans
# (exclude_requester), and the person an agent acts for never does, whatever a policy says.

# Two leads for a bulk removal. If no lead answered within ten minutes, on-call may stand in.
rules contains {
	"id": "leads_for_bulk_removals",
	"description": "A bulk removal needs two team leads, neither of the requesting agent's team.",
	"count": 2,
	"teams": ["leads"],
	"exclude_requester": true,
	"escalate": {"after_seconds": 600, "teams": ["oncall"]},
} if bulk_removal

# Money above the threshold needs finance.
rules contains {
	"id": "finance_above_threshold",
	"description": sprintf("A plan that may cost more than %v credits needs someone from finance.", [data.thresholds.finance_credits]),
	"count": 1,
	"teams": ["finance"],
	"exclude_requester": true,
} if cost > data.thresholds.finance_credits

# Everything else the capability sends to people needs one approver, from any team.
rules contains {
	"id": "one_approver",
	"description": "A plan its capability sends to people needs one approver.",
	"count": 1,
	"exclude_requester": true,
} if {
	waits
	not bulk_removal
	cost <= data.thresholds.finance_credits
}

# No bulk removals in the quiet hours, when nobody is around to notice what went wrong.
deny contains sprintf("No bulk removals between %d:00 and %d:00 (%s).", [from, until, zone]) if {
	bulk_removal
	from := data.quiet_hours.from
	until := data.quiet_hours.until
	zone := data.quiet_hours.timezone
	hour := time.clock([time.parse_rfc3339_ns(input.now), zone])[0]
	quiet(hour, from, until)
}

quiet(hour, from, until) if hour >= from

quiet(hour, from, until) if hour < until
