# A policy for a gateway in front of a coding agent's tool calls (docs/agent-hook.md): reads
# need nobody, a shell command outside a short list needs one person, and a push to a protected
# branch needs a lead. Anything else keeps its capability's own rule.
#
#   countersign-gateway policy test examples/policy-coding-agent
#   countersign-gateway serve --database sqlite://gw.db --policy examples/policy-coding-agent
package countersign.approval

import rego.v1

agent_call if input.capability.id == "agent.tool_call"

tool := input.plan.request.params.tool_name

command := input.plan.request.params.tool_input.command if tool == "Bash"

# Claude Code's tools that only read.
reads := {"Read", "Glob", "Grep", "LS", "NotebookRead", "WebSearch", "WebFetch", "TodoWrite"}

# One plain command: no chaining, pipes, redirects or substitutions that could hide another.
plain if not regex.match("[;&|<>$`()\\n]", command)

# A command of the list, alone or with arguments.
listed if {
	plain
	some allowed in data.commands.allowed
	words := split(command, " ")
	count(words) >= count(split(allowed, " "))
	array.slice(words, 0, count(split(allowed, " "))) == split(allowed, " ")
}

# `git push` naming a protected branch (`main`, `HEAD:main`, `+main`).
protected_push if {
	startswith(command, "git push")
	some word in split(command, " ")
	some branch in data.protected_branches
	branch in {word, trim_prefix(word, "+"), split(word, ":")[count(split(word, ":")) - 1]}
}

needs_nobody if tool in reads

needs_nobody if listed

rules contains {
	"id": "lead_for_protected_push",
	"description": "A push to a protected branch needs a lead.",
	"count": 1,
	"teams": ["leads"],
} if {
	agent_call
	protected_push
}

rules contains {
	"id": "one_person",
	"description": "A coding agent's call outside the reads and listed commands needs one person.",
	"count": 1,
} if {
	agent_call
	not needs_nobody
	not protected_push
}

# Every other capability keeps its own rule (the built-in policy's answer).
rules contains {
	"id": "capability_rule",
	"description": "The capability's own rule.",
	"count": input.capability.approval.required_approvals,
} if {
	not agent_call
	waits
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
