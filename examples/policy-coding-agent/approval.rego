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

# Claude Code's tools that only read this machine (WebFetch and WebSearch send what they are
# given out: they are not here).
reads := {"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite"}

# A listed command exactly, or followed only by plain operands: no options (which can write a
# file or run a program: `--output=…`, `--config …`), no quotes, separators, pipes, redirects,
# substitutions, globs or variables that could hide another command.
words := split(command, " ")

operand(word) if regex.match(`^[A-Za-z0-9_][A-Za-z0-9_./:@+-]*$`, word)

listed if {
	some allowed in data.commands.allowed
	prefix := split(allowed, " ")
	count(words) >= count(prefix)
	array.slice(words, 0, count(prefix)) == prefix
	every word in array.slice(words, count(prefix), count(words)) {
		operand(word)
	}
}

# A push that names a protected branch (`main`, `+main`, `HEAD:main`, `refs/heads/main`), that
# pushes everything (`--all`, `--mirror`), or that names no branch at all (it pushes the current
# one, which may be protected). Any `git … push` counts, options before `push` included.
pushes if regex.match(`(^|[;&|(]\s*)git(\s+-\S+(\s+[^-\s]\S*)?)*\s+push(\s|$)`, command)

push_words := [w | some w in regex.split(`\s+`, trim_space(command)); w != ""]

branch_of(word) := trim_prefix(trim_prefix(split(trim_prefix(word, "+"), ":")[count(split(word, ":")) - 1], "refs/heads/"), "+")

protected_push if {
	pushes
	some word in push_words
	branch_of(word) in data.protected_branches
}

protected_push if {
	pushes
	some word in push_words
	word in {"--all", "--mirror"}
}

protected_push if {
	pushes
	after := [w | some i, w in push_words; i > push_index; not startswith(w, "-")]
	count(after) < 2
}

push_index := min([i | some i, w in push_words; w == "push"])

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
