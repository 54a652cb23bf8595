"""The layering rules of docs/architecture.md, over `cargo metadata` and the crates' sources."""

import json
import pathlib
import re
import sys

# Each workspace crate, and the workspace crates it may depend on (normal dependencies).
MAY_USE = {
    "countersign-proto": set(),
    "countersign-pack": {"countersign-proto"},
    "countersign-policy": {"countersign-proto"},
    "countersign-demo-world": {"countersign-pack", "countersign-proto"},
    "countersign-providers": {"countersign-pack", "countersign-proto"},
    "countersign-example-pack": {"countersign-pack", "countersign-proto"},
    "countersign-engine": {"countersign-pack", "countersign-policy", "countersign-proto"},
    "countersign-api": {"countersign-engine", "countersign-pack", "countersign-proto"},
    "countersign-embedded": {
        "countersign-api", "countersign-engine", "countersign-pack", "countersign-policy",
        "countersign-proto", "countersign-demo-world", "countersign-providers",
    },
    "countersign-gateway": {
        "countersign-api", "countersign-engine", "countersign-pack", "countersign-policy",
        "countersign-proto", "countersign-demo-world", "countersign-providers",
        "countersign-embedded",
    },
    "countersign-console": {"countersign-proto"},
    "countersign-cli": {"countersign-console", "countersign-proto"},
    "countersign-desktop": {"countersign-console", "countersign-proto", "countersign-embedded"},
}

# Packages that may not be anywhere in a crate's normal dependency graph.
NEVER = {
    "countersign-pack": {"axum", "rmcp", "lettre", "reqwest"},
    "countersign-policy": {"axum", "rmcp", "lettre", "reqwest", "sqlx", "tokio"},
    "countersign-engine": {"axum", "rmcp", "lettre", "reqwest"},
    "countersign-api": {"rmcp", "lettre", "reqwest"},
    "countersign-embedded": {"rmcp", "lettre", "countersign-gateway"},
    "countersign-desktop": {"rmcp", "lettre", "countersign-gateway"},
    "countersign-console": {"axum", "countersign-engine", "countersign-api"},
}


def main(path):
    meta = json.loads(pathlib.Path(path).read_text())
    packages = {p["id"]: p for p in meta["packages"]}
    members = {packages[i]["name"]: packages[i] for i in meta["workspace_members"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    breaches = []

    unknown = set(members) - set(MAY_USE) - {"countersign-e2e"}
    for name in sorted(unknown):
        breaches.append(f"{name} is not in tests/layering.py: say what it may depend on")

    def normal_deps(node_id):
        for dep in nodes[node_id]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                yield dep["pkg"]

    for name, allowed in MAY_USE.items():
        package = members.get(name)
        if package is None:
            breaches.append(f"{name} is missing from the workspace")
            continue
        for dep in normal_deps(package["id"]):
            dep_name = packages[dep]["name"]
            if dep_name in members and dep_name not in allowed:
                breaches.append(f"{name} depends on {dep_name}")
        seen, todo = set(), [package["id"]]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            todo.extend(normal_deps(current))
        reached = {packages[i]["name"] for i in seen}
        for forbidden in sorted(NEVER.get(name, set()) & reached):
            breaches.append(f"{name} reaches {forbidden}")

    for name, package in members.items():
        src = pathlib.Path(package["manifest_path"]).parent / "src"
        for cycle in module_cycles(src):
            breaches.append(f"{name}: modules import each other in a circle: {' -> '.join(cycle)}")

    if breaches:
        print("layering: " + "\nlayering: ".join(breaches), file=sys.stderr)
        return 1
    print(f"layering: {len(MAY_USE)} crates keep to their layers; no module circles")
    return 0


def module_cycles(src):
    """Circles among a crate's top-level modules. The crate root (lib.rs, main.rs) is the
    crate's front: it may use every module and every module may use what it defines."""
    roots = {"lib.rs", "main.rs"}
    files = [p for p in src.rglob("*.rs") if p.relative_to(src).parts[0] not in roots]
    modules = {top(p, src) for p in files}
    edges = {m: set() for m in modules}
    for path in files:
        here = top(path, src)
        text = strip_comments(path.read_text())
        for used in used_modules(text):
            if used in modules and used != here:
                edges[here].add(used)
    return cycles(edges)


def top(path, src):
    first = path.relative_to(src).parts[0]
    return first[:-3] if first.endswith(".rs") else first


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def used_modules(text):
    for match in re.finditer(r"\bcrate::(\{[^;]*?\}|\w+)", text, re.S):
        body = match.group(1)
        if body.startswith("{"):
            for part in re.split(r",", body[1:-1]):
                name = part.strip().split("::")[0].strip()
                if name:
                    yield name
        else:
            yield body


def cycles(edges):
    """Strongly connected components of more than one module, each as a path that closes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component) + [sorted(component)[0]])

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
