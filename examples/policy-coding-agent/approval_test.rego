# countersign-gateway policy test examples/policy-coding-agent
package countersign.approval

import rego.v1

call(tool, tool_input) := {
	"capability": {"id": "agent.tool_call", "approval": {"rule": "always", "required_approvals": 1}},
	"risk": [],
	"plan": {"request": {"params": {"tool_name": tool, "tool_input": tool_input, "cwd": "/src"}},
	         "estimated_cost": {"amount_max": "0"}},
}

ids := {rule.id | some rule in rules}

test_reads_need_nobody if {
	ids == set() with input as call("Read", {"file_path": "/src/a.rs"})
	ids == set() with input as call("Grep", {"pattern": "x"})
}

test_a_listed_command_needs_nobody if {
	ids == set() with input as call("Bash", {"command": "git status"})
	ids == set() with input as call("Bash", {"command": "cargo test engine"})
}

test_a_listed_command_hiding_another_needs_a_person if {
	ids == {"one_person"} with input as call("Bash", {"command": "git status; rm -rf /"})
	ids == {"one_person"} with input as call("Bash", {"command": "ls $(rm -rf ~)"})
	ids == {"one_person"} with input as call("Bash", {"command": "cargo testx"})
}

test_a_listed_command_with_options_needs_a_person if {
	ids == {"one_person"} with input as call("Bash", {"command": "git log -1 --output=/home/dana/.bashrc"})
	ids == {"one_person"} with input as call("Bash", {"command": "cargo test --config 'x=1'"})
	ids == {"one_person"} with input as call("Bash", {"command": "cargo build --manifest-path /tmp/x/Cargo.toml"})
	ids == {"one_person"} with input as call("Bash", {"command": "ls ~/.ssh"})
}

test_web_tools_are_not_reads if {
	ids == {"one_person"} with input as call("WebFetch", {"url": "https://example.com"})
}

test_other_commands_and_writes_need_one_person if {
	ids == {"one_person"} with input as call("Bash", {"command": "rm -rf build"})
	ids == {"one_person"} with input as call("Edit", {"file_path": "/src/a.rs"})
	ids == {"one_person"} with input as call("mcp__github__create_issue", {})
}

test_a_push_to_a_protected_branch_needs_a_lead if {
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git push origin main"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git push origin HEAD:master"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git push origin HEAD:refs/heads/main"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git -C . push origin main"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git  push  origin  +main"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git push"})
	ids == {"lead_for_protected_push"} with input as call("Bash", {"command": "git push --all origin"})
	ids == {"one_person"} with input as call("Bash", {"command": "git push origin feature"})
}

test_other_capabilities_keep_their_own_rule if {
	ids == {"capability_rule"} with input as {
		"capability": {"id": "projects.rename", "approval": {"rule": "always", "required_approvals": 1}},
		"risk": [], "plan": {"estimated_cost": {"amount_max": "0.01"}},
	}
	ids == set() with input as {
		"capability": {"id": "projects.settings.update", "approval": {"rule": "when_risky", "required_approvals": 1}},
		"risk": [], "plan": {"estimated_cost": {"amount_max": "0.01"}},
	}
}
